// Checked and saturating integer arithmetic (sim/core/checked_math.hpp).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <limits>

#include "core/checked_math.hpp"

namespace {

constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
constexpr std::int64_t kMin = std::numeric_limits<std::int64_t>::min();

}  // namespace

TEST_CASE("checked_mul: the product, or nothing past 64 bits") {
  CHECK(dtsim::core::checked_mul(3, -4) == -12);
  CHECK(dtsim::core::checked_mul(std::int64_t{1} << 31, std::int64_t{1} << 31) == std::int64_t{1} << 62);
  CHECK_FALSE(dtsim::core::checked_mul(std::int64_t{1} << 32, std::int64_t{1} << 31).has_value());
  CHECK_FALSE(dtsim::core::checked_mul(kMin, -1).has_value());
}

TEST_CASE("saturating_int64: static_cast inside the range, the bounds outside it") {
  using dtsim::core::saturating_int64;
  CHECK(saturating_int64(2.9) == 2);  // truncated toward zero, as static_cast
  CHECK(saturating_int64(-2.9) == -2);
  CHECK(saturating_int64(std::ldexp(1.0, 53)) == std::int64_t{1} << 53);
  // static_cast<double>(kMax) is 2^63, one past the range: it saturates, as does 2^70.
  CHECK(saturating_int64(static_cast<double>(kMax)) == kMax);
  CHECK(saturating_int64(std::ldexp(1.0, 70)) == kMax);
  CHECK(saturating_int64(std::ldexp(1.0, 62)) == std::int64_t{1} << 62);
  CHECK(saturating_int64(-std::ldexp(1.0, 63)) == kMin);  // -2^63 is in the range
  CHECK(saturating_int64(-std::ldexp(1.0, 70)) == kMin);
  CHECK(saturating_int64(std::numeric_limits<double>::infinity()) == kMax);
  CHECK(saturating_int64(std::nan("")) == 0);
}
