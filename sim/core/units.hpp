// Units used across dtsim.
//
// Simulated time is an integer count of nanoseconds (TimeNs); events are ordered by (time, sequence).
// Physical quantities elsewhere are doubles whose unit is spelled in the name: *_s (seconds),
// *_bytes, *_flops, *_gbps (gigabits per second), *_gbytes_per_s (gigabytes per second, 1e9 B/s),
// *_tflops (1e12 FLOP/s), *_us (microseconds).
#pragma once

#include <cmath>
#include <cstdint>

#include "core/errors.hpp"

namespace dtsim::core {

using TimeNs = std::int64_t;

inline constexpr double kNsPerS = 1e9;
inline constexpr double kGiga = 1e9;
inline constexpr double kTera = 1e12;
inline constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
inline constexpr double kSecondsPerDay = 86400.0;
inline constexpr double kBytesPerMb = 1e6;  // the *_mb keys of scenarios and profiles: decimal megabytes

// The engine's clock: simulated times stay at or below kMaxTimeNs (2^60 ns, about 36.5 years), one
// duration at or below kMaxDurationNs (2^56 ns, about 2.3 years). A duration slowed by a factor of at
// most 10 (GpuProfile::overlap_slowdown) added to a time in range stays far from 2^63: no overflow.
inline constexpr TimeNs kMaxTimeNs = TimeNs{1} << 60;
inline constexpr TimeNs kMaxDurationNs = TimeNs{1} << 56;

// Throw InfeasibleError: a duration beyond kMaxDurationNs, a time beyond kMaxTimeNs.
[[noreturn]] void reject_duration(double seconds);
[[noreturn]] void reject_time(TimeNs time);

// Rounds a duration in seconds to the nearest nanosecond (never negative). Throws InfeasibleError
// beyond kMaxDurationNs (an absurdly slow link or GPU: the plan is a result with that reason).
inline TimeNs seconds_to_ns(double seconds) {
  if (!(seconds > 0.0)) return 0;
  if (!(seconds * kNsPerS <= static_cast<double>(kMaxDurationNs))) [[unlikely]]
    reject_duration(seconds);
  return static_cast<TimeNs>(std::llround(seconds * kNsPerS));
}

inline double ns_to_seconds(TimeNs ns) { return static_cast<double>(ns) / kNsPerS; }

// Gigabits per second to bytes per second.
inline double gbps_to_bytes_per_s(double gbps) { return gbps * kGiga / 8.0; }

}  // namespace dtsim::core
