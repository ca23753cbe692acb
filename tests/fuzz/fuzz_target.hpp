// Shared by the libFuzzer targets (tests/fuzz/README.md): the input as text, and the one outcome a
// reader may have besides success. A reader given any bytes either returns or throws core::InputError
// (bad input: exit status 2); anything else that escapes (InternalError, std::bad_alloc, another
// exception), a sanitizer report, a crash or a hang is a finding.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/errors.hpp"

namespace dtsim::fuzz {

inline std::string as_text(const std::uint8_t* data, std::size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}

// Runs `read` on the input; InputError is the expected way to refuse it.
template <typename Read>
int accept_or_refuse(Read&& read) {
  try {
    read();
  } catch (const core::InputError&) {
  }
  return 0;
}

}  // namespace dtsim::fuzz
