// Validated regimes (hardware_profiles/accuracy.json, docs/accuracy.md "Expected error"): for each validation
// group of tests/validation, what its runs were (workload, GPU family, scale, software stack), whether
// its figure is a time or a rate, and its signed errors (predicted - measured) / measured in % as the
// validation record has them. The validation tests keep the figures equal to the record.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace dtsim::config {

enum class RegimeScale { one_gpu, one_node, multi_node };
enum class RegimeMetric { time, rate };
// The workload a group validates: transformers (and MLPs), layer-table workloads (CNNs, parameter
// servers), recommendation models, mixture-of-experts transformers (whose expert layers the dense
// groups do not validate).
enum class RegimeWorkload { transformer, layer_table, dlrm, moe };

struct ValidatedRegime {
  std::string group;     // the validation group's title
  RegimeWorkload workload = RegimeWorkload::transformer;
  std::string gpu;       // GPU family: a GPU profile id up to its first '-' ("a100", "h100")
  RegimeScale scale = RegimeScale::multi_node;
  std::string software;  // a software stack id; empty: none named
  RegimeMetric metric = RegimeMetric::time;
  std::string source;
  std::int64_t n = 0;
  double mape_pct = 0.0;
  double median_signed_pct = 0.0;
  double p10_signed_pct = 0.0;
  double p90_signed_pct = 0.0;
};

// Reads <hardware_profiles>/accuracy.json; InputError naming the file and the JSON pointer when it is
// malformed, an empty list when the file does not exist (a data folder without it states no band).
std::vector<ValidatedRegime> load_accuracy(const std::string& hardware_profiles);

}  // namespace dtsim::config
