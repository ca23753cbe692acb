#include "compute/attention_efficiency.hpp"

#include <cmath>

namespace dtsim::compute {

double attention_efficiency(const graph::GemmShape& work, const config::GpuProfile& gpu) {
  double efficiency = gpu.attention_efficiency;
  if (gpu.attention_half_waves > 0.0 && work.m > 0 && work.batch > 0 && gpu.sm_count > 0) {
    constexpr double kQueryTileRows = 128.0;
    const double tiles =
        static_cast<double>(work.batch) * std::ceil(static_cast<double>(work.m) / kQueryTileRows);
    const double waves = tiles / static_cast<double>(gpu.sm_count);
    efficiency *= waves / (waves + gpu.attention_half_waves);
  }
  if (gpu.attention_half_keys > 0.0 && work.n > 0) {
    const auto keys = static_cast<double>(work.n);
    efficiency *= keys / (keys + gpu.attention_half_keys);
  }
  return efficiency;
}

}  // namespace dtsim::compute
