#include "core/units.hpp"

#include <fmt/format.h>

namespace dtsim::core {

void reject_duration(double seconds) {
  throw InfeasibleError(fmt::format(
      "one operation would take {:.3g} s, beyond the {:.3g} s (about 2.3 years) dtsim can time: check the "
      "rates and sizes of the scenario and its profiles (bandwidths, FLOP rates, batch)",
      seconds, ns_to_seconds(kMaxDurationNs)));
}

void reject_time(TimeNs time) {
  throw InfeasibleError(fmt::format(
      "the simulated run passed {:.3g} s, beyond the {:.3g} s (about 36 years) of dtsim's clock: check the "
      "rates and sizes of the scenario and its profiles (bandwidths, FLOP rates, batch)",
      ns_to_seconds(time), ns_to_seconds(kMaxTimeNs)));
}

}  // namespace dtsim::core
