// Counter-based random numbers: every draw is a pure function of (seed, stream, index), identical on
// every platform and independent of the order in which draws are made, so that simulations are
// deterministic whatever runs in parallel. splitmix64 (Steele, Lea and Flood, "Fast splittable
// pseudorandom number generators", OOPSLA 2014) mixes the counter; Box-Muller turns two uniforms into a
// standard normal.
#pragma once

#include <cmath>
#include <cstdint>
#include <numbers>

namespace dtsim::core {

inline std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// A uniform in (0, 1) from 53 of the bits (never 0 or 1).
inline double uniform01(std::uint64_t bits) { return (static_cast<double>(bits >> 11) + 0.5) * 0x1.0p-53; }

// The index-th standard normal draw of a stream.
inline double standard_normal(std::uint64_t seed, std::int64_t stream, std::int64_t index) {
  const std::uint64_t base = splitmix64(
      seed ^ splitmix64(static_cast<std::uint64_t>(stream) * 0x100000001b3ULL + static_cast<std::uint64_t>(index)));
  const double u1 = uniform01(splitmix64(base));
  const double u2 = uniform01(splitmix64(base + 1));
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

// A lognormal factor with mean 1 and coefficient of variation cv: exp(-s^2 / 2 + s Z) with
// s^2 = ln(1 + cv^2), Z the index-th standard normal of the stream.
inline double lognormal_factor(std::uint64_t seed, std::int64_t stream, std::int64_t index, double cv) {
  const double sigma2 = std::log1p(cv * cv);
  return std::exp(-0.5 * sigma2 + std::sqrt(sigma2) * standard_normal(seed, stream, index));
}

}  // namespace dtsim::core
