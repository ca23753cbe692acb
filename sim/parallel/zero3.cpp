#include "parallel/zero3.hpp"

#include <algorithm>

#include "models/transformer/transformer.hpp"

namespace dtsim::parallel {

std::vector<double> zero3_layer_groups(const config::Scenario& s, const config::TransformerSpec& m) {
  const double t = static_cast<double>(s.parallelism.tensor);
  const double whole = models::tensor_replicated_parameters(m);  // on every tensor rank
  if (s.parallelism.zero3.granularity == config::Zero3Granularity::layer)
    return {(models::parameters_per_layer(m) - whole) / t + whole};
  std::vector<double> groups;
  double pending = 0.0;
  for (const double elements : models::layer_parameter_tensors_per_rank(m, t)) {
    pending += elements;
    if (elements >= s.parallelism.zero3.persistence_threshold) {
      groups.push_back(pending);
      pending = 0.0;
    }
  }
  if (groups.empty()) return {pending};
  groups.back() += pending;
  return groups;
}

std::vector<double> zero3_layer_groups(const config::Scenario& s) { return zero3_layer_groups(s, s.model); }

double zero3_gathered_parameters(const config::Scenario& s, const config::TransformerSpec& m) {
  const double whole = models::tensor_replicated_parameters(m);  // on every tensor rank
  const double layer =
      (models::parameters_per_layer(m) - whole) / static_cast<double>(s.parallelism.tensor) + whole;
  if (s.parallelism.zero3.fetch == config::Zero3Fetch::prefetch) return 2 * layer;
  const std::vector<double> groups = zero3_layer_groups(s, m);
  const double copies = s.parallelism.zero3.buffers == config::CollectiveBuffers::list ? 2.0 : 1.0;
  return copies * *std::max_element(groups.begin(), groups.end());
}

double zero3_gathered_parameters(const config::Scenario& s) { return zero3_gathered_parameters(s, s.model); }

}  // namespace dtsim::parallel
