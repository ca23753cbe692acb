// Integer arithmetic that reports overflow instead of wrapping: products of user-given sizes and
// degrees (nodes x GPUs per node, tensor x pipeline x context x data) are checked before they are
// compared or used. Sizes that are costs (tokens x width, bytes, FLOPs) are computed in doubles
// instead; saturating_int64() brings such a size back to an integer field (a GEMM dimension) without
// the undefined behaviour of converting a double past 2^63.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>

namespace dtsim::core {

// a * b, or std::nullopt when the product does not fit in 64 bits.
inline std::optional<std::int64_t> checked_mul(std::int64_t a, std::int64_t b) {
  std::int64_t product = 0;
  if (__builtin_mul_overflow(a, b, &product)) return std::nullopt;
  return product;
}

// `v` truncated toward zero as static_cast<std::int64_t>(v) would, but clamped to the int64 range
// (where the cast is undefined); NaN gives 0. Note that static_cast<double>(INT64_MAX) is 2^63,
// already out of range.
inline std::int64_t saturating_int64(double v) {
  if (std::isnan(v)) return 0;
  // -2^63 and 2^63 are exactly representable; every double strictly between them converts.
  if (v >= 9223372036854775808.0) return std::numeric_limits<std::int64_t>::max();
  if (v <= -9223372036854775808.0) return std::numeric_limits<std::int64_t>::min();
  return static_cast<std::int64_t>(v);
}

}  // namespace dtsim::core
