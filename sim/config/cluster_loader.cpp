#include "config/cluster_loader.hpp"

#include <algorithm>
#include <array>
#include <filesystem>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "config/mixed_gpus_loader.hpp"
#include "config/profile_loader.hpp"
#include "config/speed_factors_loader.hpp"
#include "core/checked_math.hpp"

namespace dtsim::config {

using nlohmann::json;

// Named, not anonymous: unity builds put several files in one translation unit.
namespace cluster_reading {

std::string profile_path(const DataPaths& data, const char* kind, const std::string& id) {
  return (std::filesystem::path(data.hardware_profiles) / kind / (id + ".json")).string();
}

// "cluster.network.topology": kind, leaf and spine tiers (docs/networks.md "Topology").
void read_topology(ObjectReader& topology, NetworkSpec& net) {
  topology.expect_keys(
      {"kind", "oversubscription", "nodes_per_leaf", "leaves_per_pod", "core_oversubscription"});
  net.topology = topology.optional_enum<TopologyKind>(
      "kind", TopologyKind::fat_tree,
      named_choices(std::array{TopologyKind::fat_tree, TopologyKind::rail_optimized}));
  net.oversubscription = topology.optional<double>("oversubscription", 1.0, NumberRule::at_least(1.0));
  net.nodes_per_leaf = topology.optional<std::int64_t>("nodes_per_leaf", 1, IntRule::positive());
  if (topology.has("leaves_per_pod")) {
    net.leaves_per_pod = topology.required<std::int64_t>("leaves_per_pod", IntRule::positive());
  }
  if (topology.has("core_oversubscription") && !net.leaves_per_pod) {
    throw topology.mismatch("core_oversubscription",
                            "no core tier oversubscription without \"leaves_per_pod\"");
  }
  net.core_oversubscription =
      topology.optional<double>("core_oversubscription", 1.0, NumberRule::at_least(1.0));
}

// The node as a job using `gpus` of its GPUs sees it: NVLink/NVSwitch bandwidth per GPU is unchanged,
// the NICs are those of the GPUs in use (the profile's NICs per GPU, rounded up, at least one: NCCL
// gives each GPU the NICs nearest to it), host memory stays the whole node's.
void narrow_node(NodeProfile& node, std::int64_t gpus) {
  const std::int64_t nics =
      (std::int64_t{node.nics_per_node} * gpus + node.gpus_per_node - 1) / node.gpus_per_node;
  node.nics_per_node = static_cast<int>(std::max<std::int64_t>(1, nics));
  node.gpus_per_node = static_cast<int>(gpus);
}

}  // namespace cluster_reading

void read_cluster(ObjectReader& top, const DataPaths& data, Scenario& scenario) {
  using namespace cluster_reading;
  ObjectReader cluster = top.child("cluster");
  cluster.expect_keys({"node", "nodes", "gpus", "network", "speed_factors", "mixed_gpus"});
  ClusterSpec& spec = scenario.cluster;
  spec.node_id = cluster.required<std::string>("node");
  scenario.node = load_node_profile(data.hardware_profiles, spec.node_id,
                                    IdLocation{cluster.file(), pointer_append(cluster.pointer(), "node")});
  spec.nodes = cluster.required<std::int64_t>("nodes", IntRule::positive());
  spec.node_gpus = scenario.node.gpus_per_node;
  const std::optional<std::int64_t> total = core::checked_mul(spec.nodes, spec.node_gpus);
  if (!total) throw cluster.mismatch("nodes", "a node count whose GPU total fits in a 64-bit integer");
  spec.gpus = cluster.maybe<std::int64_t>("gpus", IntRule::positive());
  if (spec.gpus) {
    if (*spec.gpus > *total || *spec.gpus % spec.nodes != 0) {
      throw cluster.mismatch(
          "gpus", fmt::format("a multiple of the {} node(s) up to {} ({} GPUs per {} node)", spec.nodes,
                              *total, spec.node_gpus, spec.node_id));
    }
    narrow_node(scenario.node, *spec.gpus / spec.nodes);
  }

  const json empty = json::object();
  const json* network_json = cluster.find("network");
  ObjectReader network(network_json != nullptr ? *network_json : empty, cluster.file(),
                       pointer_append(cluster.pointer(), "network"));
  network.expect_keys(
      {"fabric", "nic_gbps", "nics_per_node", "topology", "all_reduce_algorithm", "protocol"});
  IdLocation fabric_at{profile_path(data, "nodes", spec.node_id), "/network/fabric"};
  if (network.has("fabric"))
    fabric_at = IdLocation{network.file(), pointer_append(network.pointer(), "fabric")};
  spec.network.fabric = network.optional<std::string>("fabric", scenario.node.fabric);
  spec.network.nic_gbps =
      network.optional<double>("nic_gbps", scenario.node.nic_gbps, NumberRule::positive());
  spec.network.nics_per_node =
      network.optional<int>("nics_per_node", scenario.node.nics_per_node,
                            IntRule::between(1, std::int64_t{kMaxNicsPerGpu} * scenario.node.gpus_per_node));
  const json* topology_json = network.find("topology");
  ObjectReader topology(topology_json != nullptr ? *topology_json : empty, network.file(),
                        pointer_append(network.pointer(), "topology"));
  read_topology(topology, spec.network);
  topology.finish();
  spec.network.all_reduce_algorithm = network.optional_enum<AllReduceAlgorithm>(
      "all_reduce_algorithm", AllReduceAlgorithm::automatic,
      named_choices(std::array{AllReduceAlgorithm::automatic, AllReduceAlgorithm::ring,
                               AllReduceAlgorithm::tree, AllReduceAlgorithm::hierarchical,
                               AllReduceAlgorithm::nvls, AllReduceAlgorithm::halving_doubling}));
  spec.network.protocol = network.optional_enum<CollectiveProtocol>(
      "protocol", CollectiveProtocol::automatic,
      named_choices(std::array{CollectiveProtocol::automatic, CollectiveProtocol::ll,
                               CollectiveProtocol::ll128, CollectiveProtocol::simple}));
  network.finish();
  spec.speed_factors =
      read_speed_factors(cluster, spec.nodes, scenario.node.gpus_per_node, spec.network.nodes_per_leaf);
  spec.mixed_gpus = read_mixed_gpus(cluster, spec.nodes, data.hardware_profiles);
  cluster.finish();

  scenario.gpu = load_gpu_profile(data.hardware_profiles, scenario.node.gpu,
                                  IdLocation{profile_path(data, "nodes", spec.node_id), "/gpu"});
  scenario.fabric = load_fabric_profile(data.hardware_profiles, spec.network.fabric, fabric_at);
}

void check_cluster(const std::string& file, const Scenario& scenario) {
  check_speed_factors(file, scenario);
  check_mixed_gpus(file, scenario);
}

}  // namespace dtsim::config
