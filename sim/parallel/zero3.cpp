#include "parallel/zero3.hpp"

#include <algorithm>
#include <numeric>

#include "models/transformer/transformer.hpp"
#include "parallel/memory_model.hpp"

namespace dtsim::parallel {

namespace {

// Tensors grouped by the persistence rule (zero3.hpp): each one of at least `threshold` elements closes
// a group with the smaller ones before it; trailing small ones join the last group.
std::vector<double> persistence_groups(const std::vector<double>& tensors, double threshold) {
  std::vector<double> groups;
  double pending = 0.0;
  for (const double elements : tensors) {
    pending += elements;
    if (elements >= threshold) {
      groups.push_back(pending);
      pending = 0.0;
    }
  }
  if (groups.empty()) return {pending};
  groups.back() += pending;
  return groups;
}

}  // namespace

std::vector<double> zero3_layer_groups(const config::Scenario& s, const config::TransformerSpec& m) {
  const GpuParameters layer = layer_parameters_per_gpu(s, m);
  if (s.parallelism.zero3.granularity == config::Zero3Granularity::layer) return {layer.dense};
  return persistence_groups(
      models::dense_parameter_tensors_per_rank(m, static_cast<double>(s.parallelism.tensor)),
      s.parallelism.zero3.persistence_threshold);
}

std::vector<double> zero3_layer_groups(const config::Scenario& s) { return zero3_layer_groups(s, s.model); }

std::vector<double> zero3_expert_groups(const config::Scenario& s, const config::TransformerSpec& m) {
  const double experts = layer_parameters_per_gpu(s, m).experts;
  // Held whole where no other rank holds the same experts: nothing to gather.
  if (experts <= 0.0 || s.parallelism.expert_data_degree() <= 1) return {};
  if (s.parallelism.zero3.granularity == config::Zero3Granularity::layer) return {experts};
  // Up (gate and up fused for SwiGLU) and down weights: f x h x (2 | 1) and f x h.
  const double up_widths = m.mlp == config::MlpKind::swiglu ? 2.0 : 1.0;
  const double up = experts * up_widths / (up_widths + 1.0);
  return persistence_groups({up, experts - up}, s.parallelism.zero3.persistence_threshold);
}

double zero3_gathered_parameters(const config::Scenario& s, const config::TransformerSpec& m) {
  std::vector<double> groups = zero3_layer_groups(s, m);
  const std::vector<double> experts = zero3_expert_groups(s, m);
  groups.insert(groups.end(), experts.begin(), experts.end());
  const double layer = std::accumulate(groups.begin(), groups.end(), 0.0);
  if (s.parallelism.zero3.fetch == config::Zero3Fetch::prefetch) return 2 * layer;
  const double copies = s.parallelism.zero3.buffers == config::CollectiveBuffers::list ? 2.0 : 1.0;
  // A layer's collectives gather its parts back to back and it holds them all; per tensor, one at a time.
  if (s.parallelism.zero3.granularity == config::Zero3Granularity::layer) return copies * layer;
  return copies * *std::max_element(groups.begin(), groups.end());
}

double zero3_gathered_parameters(const config::Scenario& s) { return zero3_gathered_parameters(s, s.model); }

double zero3_head_use_parameters(const config::TransformerSpec& m) {
  const bool tied = m.kind != config::ModelKind::mlp && m.tied_embeddings;
  return models::head_parameters(m) +
         (tied ? static_cast<double>(m.vocab_size) * static_cast<double>(m.hidden_size) : 0.0);
}

}  // namespace dtsim::parallel
