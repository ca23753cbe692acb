// The InputError a piece of code throws, for tests of error messages.
#pragma once

#include <doctest/doctest.h>

#include "core/errors.hpp"

namespace dtsim::testing {

// The InputError thrown by `f`; fails the test when nothing is thrown.
template <typename F>
core::InputError input_error_of(F&& f) {
  try {
    f();
  } catch (const core::InputError& e) {
    return e;
  }
  FAIL("expected an InputError");
  return core::InputError("", "", "");
}

}  // namespace dtsim::testing
