#include "config/speed_factors_loader.hpp"

#include <algorithm>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "config/mixed_gpus.hpp"
#include "core/errors.hpp"

namespace dtsim::config {

using nlohmann::json;

namespace {

// A leaf entry: the leaf switch and its uplink factor, nothing else.
SpeedFactor read_leaf_entry(ObjectReader& e, std::int64_t leaves, const NumberRule& factor) {
  for (const char* key : {"node", "gpu", "compute", "nic", "nvlink", "jitter_cv"}) {
    if (e.has(key)) {
      throw e.error_at(key,
                       "an entry with \"leaf\" names a leaf switch and states its \"uplink\" factor "
                       "alone: give the node's factors in an entry of their own");
    }
  }
  if (leaves <= 1) {
    throw e.error_at("leaf",
                     "the fabric has one leaf switch (cluster.network.topology.nodes_per_leaf covers "
                     "every node): it has no uplinks between leaves to slow");
  }
  SpeedFactor f;
  f.leaf = e.required<std::int64_t>("leaf", IntRule::between(0, leaves - 1));
  f.uplink = e.required<double>("uplink", factor);
  return f;
}

}  // namespace

std::vector<SpeedFactor> read_speed_factors(ObjectReader& cluster, std::int64_t nodes,
                                            std::int64_t gpus_per_node, std::int64_t nodes_per_leaf) {
  std::vector<SpeedFactor> out;
  const json* found = cluster.find("speed_factors");
  if (found == nullptr) return out;
  const std::string at = pointer_append(cluster.pointer(), "speed_factors");
  if (!found->is_array()) {
    throw core::InputError(
        cluster.file(), at,
        fmt::format("got a value of type {}; expected an array of objects with \"node\" and "
                    "\"compute\", \"nic\", \"nvlink\" or \"jitter_cv\", or with "
                    "\"leaf\" and \"uplink\"",
                    json_type_name(*found)));
  }
  const NumberRule factor{0.0, true, kMaxSpeedFactor, false};
  const std::int64_t leaves = leaf_blocks(nodes, nodes_per_leaf).blocks;
  for (std::size_t i = 0; i < found->size(); ++i) {
    ObjectReader e((*found)[i], cluster.file(), pointer_append(at, i));
    e.expect_keys({"node", "gpu", "compute", "nic", "nvlink", "jitter_cv", "leaf", "uplink"});
    if (e.has("leaf")) {
      out.push_back(read_leaf_entry(e, leaves, factor));
      e.finish();
      continue;
    }
    if (e.has("uplink"))
      throw e.error_at("uplink", "an uplink factor is a leaf switch's: state it in an entry with \"leaf\"");
    SpeedFactor f;
    f.node = e.required<std::int64_t>("node", IntRule::between(0, nodes - 1));
    f.gpu = e.maybe<std::int64_t>("gpu", IntRule::between(0, gpus_per_node - 1));
    f.compute = e.optional<double>("compute", 1.0, factor);
    f.nic = e.optional<double>("nic", 1.0, factor);
    f.nvlink = e.optional<double>("nvlink", 1.0, factor);
    f.jitter_cv = e.optional<double>("jitter_cv", 0.0, NumberRule::between(0.0, kMaxJitterCv));
    if (f.gpu && e.has("nic"))
      throw e.error_at("nic", "a NIC factor is a node's: state it in an entry without \"gpu\"");
    if (f.gpu && e.has("nvlink"))
      throw e.error_at("nvlink", "an NVLink factor is a node's: state it in an entry without \"gpu\"");
    if (!e.has("compute") && !e.has("nic") && !e.has("nvlink") && !e.has("jitter_cv"))
      throw e.error_here("expected \"compute\", \"nic\", \"nvlink\", \"jitter_cv\" or several of them");
    e.finish();
    out.push_back(f);
  }
  return out;
}

void check_speed_factors(const std::string& file, const Scenario& s) {
  const auto& factors = s.cluster.speed_factors;
  if (factors.empty()) return;
  const std::string at = "/cluster/speed_factors";
  if (s.layer_model) {
    throw core::InputError(file, at,
                           "speed factors apply to transformer and MLP models; a layer-table workload states its "
                           "slow workers in training.stragglers and training.straggler_slowdown");
  }
  if (s.simulation.ranks != RankMode::all) {
    throw core::InputError(file, at,
                           "speed factors need every rank simulated: add \"simulation\": {\"ranks\": \"all\"} "
                           "(symmetric mode simulates one rank per pipeline stage, as if all GPUs and NICs were "
                           "alike)");
  }
  // The flow level costs NIC factors (network/flow_job.hpp, make_flow_job) but not NVLink and uplink factors:
  // a GPU's NVLink port also carries its traffic to the NICs there, and it places each group's stand-in
  // on nodes of its own choosing, which need not straddle the degraded leaf.
  const bool flow_refused = std::any_of(factors.begin(), factors.end(), [](const SpeedFactor& f) {
    return f.nvlink != 1.0 || f.uplink != 1.0;
  });
  if (flow_refused && s.simulation.network == NetworkFidelity::flow) {
    throw core::InputError(
        file, at,
        "NVLink and uplink factors are costed on the analytic network level only (the flow "
        "level costs NIC factors): use \"simulation\": {\"network\": \"analytic\"}, or give "
        "compute and NIC factors alone");
  }
  // A jittery entry's GPUs may take a speed of their own in every sampled iteration.
  const bool slowed =
      std::any_of(factors.begin(), factors.end(), [](const SpeedFactor& f) { return f.compute != 1.0; });
  const auto distinct =
      (slowed ? distinct_rank_kinds({}, factors, s.gpu_count(), s.node.gpus_per_node).size() : 0) +
      static_cast<std::size_t>(std::count_if(factors.begin(), factors.end(),
                                             [](const SpeedFactor& f) { return f.jitter_cv > 0.0; }));
  if (distinct > kMaxComputeSpeeds) {
    throw core::InputError(file, at,
                           fmt::format("{} distinct GPU speeds; dtsim takes at most {} (each is costed apart)",
                                       distinct, kMaxComputeSpeeds));
  }
}

}  // namespace dtsim::config
