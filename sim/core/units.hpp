// Units used across dtsim.
//
// Simulated time is an integer count of nanoseconds (TimeNs); events are ordered by (time, sequence).
// Physical quantities elsewhere are doubles whose unit is spelled in the name: *_s (seconds),
// *_bytes, *_flops, *_gbps (gigabits per second), *_gbytes_per_s (gigabytes per second, 1e9 B/s),
// *_tflops (1e12 FLOP/s), *_us (microseconds).
#pragma once

#include <cmath>
#include <cstdint>

namespace dtsim::core {

using TimeNs = std::int64_t;

inline constexpr double kNsPerS = 1e9;
inline constexpr double kGiga = 1e9;
inline constexpr double kTera = 1e12;
inline constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// Rounds a duration in seconds to the nearest nanosecond (never negative).
inline TimeNs seconds_to_ns(double seconds) {
  if (!(seconds > 0.0)) return 0;
  return static_cast<TimeNs>(std::llround(seconds * kNsPerS));
}

inline double ns_to_seconds(TimeNs ns) { return static_cast<double>(ns) / kNsPerS; }

// Gigabits per second to bytes per second.
inline double gbps_to_bytes_per_s(double gbps) { return gbps * kGiga / 8.0; }

}  // namespace dtsim::core
