// Integer arithmetic that reports overflow instead of wrapping: products of user-given sizes and
// degrees (nodes x GPUs per node, tensor x pipeline x context x data) are checked before they are
// compared or used.
#pragma once

#include <cstdint>
#include <optional>

namespace dtsim::core {

// a * b, or std::nullopt when the product does not fit in 64 bits.
inline std::optional<std::int64_t> checked_mul(std::int64_t a, std::int64_t b) {
  std::int64_t product = 0;
  if (__builtin_mul_overflow(a, b, &product)) return std::nullopt;
  return product;
}

}  // namespace dtsim::core
