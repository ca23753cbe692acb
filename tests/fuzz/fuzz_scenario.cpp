// libFuzzer target: the scenario reader (config::load_scenario_text), with the repository's presets and
// hardware profiles.
#include "config/scenario_loader.hpp"
#include "fuzz_target.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const dtsim::config::DataPaths paths = dtsim::config::default_data_paths();
  return dtsim::fuzz::accept_or_refuse(
      [&] { dtsim::config::load_scenario_text(dtsim::fuzz::as_text(data, size), "fuzz.json", paths); });
}
