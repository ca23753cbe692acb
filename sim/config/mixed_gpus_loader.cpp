#include "config/mixed_gpus_loader.hpp"

#include <algorithm>
#include <set>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "config/profile_loader.hpp"
#include "core/errors.hpp"

namespace dtsim::config {

using nlohmann::json;

std::vector<MixedGpus> read_mixed_gpus(ObjectReader& cluster, std::int64_t nodes,
                                     const std::string& hardware_profiles) {
  std::vector<MixedGpus> out;
  const json* found = cluster.find("mixed_gpus");
  if (found == nullptr) return out;
  const std::string at = pointer_append(cluster.pointer(), "mixed_gpus");
  if (!found->is_array() || found->empty() || found->size() > kMaxMixedGpuEntries) {
    throw core::InputError(
        cluster.file(), at,
        fmt::format("got {}; expected an array of 1 to {} objects with \"first_node\", \"nodes\" and \"gpu\"",
                    found->is_array() ? fmt::format("{} entries", found->size()) : json_type_name(*found),
                    kMaxMixedGpuEntries));
  }
  for (std::size_t i = 0; i < found->size(); ++i) {
    ObjectReader e((*found)[i], cluster.file(), pointer_append(at, i));
    e.expect_keys({"first_node", "nodes", "gpu"});
    MixedGpus entry;
    entry.first_node = e.required<std::int64_t>("first_node", IntRule::between(0, nodes - 1));
    entry.nodes = e.optional<std::int64_t>("nodes", 1, IntRule::between(1, nodes - entry.first_node));
    const std::string id = e.required<std::string>("gpu");
    entry.gpu = load_gpu_profile(hardware_profiles, id, IdLocation{e.file(), pointer_append(e.pointer(), "gpu")});
    for (const MixedGpus& other : out) {
      const bool apart = entry.first_node >= other.first_node + other.nodes ||
                         other.first_node >= entry.first_node + entry.nodes;
      if (!apart) {
        throw e.error_here(fmt::format("nodes {}-{} overlap nodes {}-{} of an earlier entry; each node has one "
                                       "kind of GPU",
                                       entry.first_node, entry.first_node + entry.nodes - 1, other.first_node,
                                       other.first_node + other.nodes - 1));
      }
    }
    e.finish();
    out.push_back(std::move(entry));
  }
  return out;
}

void check_mixed_gpus(const std::string& file, const Scenario& s) {
  const auto& entries = s.cluster.mixed_gpus;
  if (entries.empty()) return;
  const std::string at = "/cluster/mixed_gpus";
  if (s.layer_model) {
    throw core::InputError(file, at,
                           "mixed GPUs apply to transformer and MLP models; a layer-table workload runs one kind of "
                           "GPU and states slower workers in training.stragglers and training.straggler_slowdown");
  }
  if (s.simulation.ranks != RankMode::all) {
    throw core::InputError(file, at,
                           "GPUs of several kinds need every rank simulated: add \"simulation\": {\"ranks\": "
                           "\"all\"} (symmetric mode simulates one rank per pipeline stage, as if all GPUs were "
                           "alike)");
  }
  if (s.training.measured_single_gpu) {
    throw core::InputError(file, at,
                           "training.measured_single_gpu calibrates one kind of GPU; with mixed GPUs each GPU is "
                           "costed from its own profile: leave the measured rate out");
  }
  const std::set<std::pair<int, double>> distinct =
      distinct_rank_kinds(entries, s.cluster.speed_factors, s.gpu_count(), s.node.gpus_per_node);
  if (distinct.size() > kMaxComputeSpeeds) {
    throw core::InputError(file, at,
                           fmt::format("{} distinct (GPU, speed) pairs; dtsim takes at most {} (each is costed apart)",
                                       distinct.size(), kMaxComputeSpeeds));
  }
}

}  // namespace dtsim::config
