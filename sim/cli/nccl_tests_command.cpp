// dtsim nccl-tests: the table NVIDIA's nccl-tests would print for one collective on a modeled cluster.
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "cli/cli.hpp"
#include "cli/commands.hpp"
#include "cli/positive_number.hpp"
#include "config/scenario_loader.hpp"
#include "core/errors.hpp"
#include "network/nccl_tests.hpp"
#include "reports/nccl_tests_report.hpp"

namespace dtsim::cli {

namespace {

const std::vector<std::pair<std::string, graph::CollectiveKind>>& operations() {
  static const std::vector<std::pair<std::string, graph::CollectiveKind>> ops{
      {"all_reduce", graph::CollectiveKind::all_reduce},
      {"all_gather", graph::CollectiveKind::all_gather},
      {"reduce_scatter", graph::CollectiveKind::reduce_scatter},
      {"alltoall", graph::CollectiveKind::all_to_all},
      {"broadcast", graph::CollectiveKind::broadcast},
      {"reduce", graph::CollectiveKind::reduce}};
  return ops;
}

double type_bytes(const std::string& type) {
  if (type == "float" || type == "int32") return 4;
  if (type == "half" || type == "bfloat16") return 2;
  if (type == "double" || type == "int64") return 8;
  if (type == "int8" || type == "uint8") return 1;
  throw core::InputError(
      "command line", "/type",
      fmt::format("got \"{}\"; expected float, half, bfloat16, double, int32, int64 or int8", type));
}

}  // namespace

double parse_size(const std::string& text, const std::string& option) {
  // nccl-tests sizes: a number with an optional K, M or G suffix (powers of 1024).
  std::size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  double scale = 1;
  if (used + 1 == text.size()) {
    switch (text.back()) {
      case 'K':
      case 'k':
        scale = 1024.0;
        break;
      case 'M':
      case 'm':
        scale = 1024.0 * 1024.0;
        break;
      case 'G':
      case 'g':
        scale = 1024.0 * 1024.0 * 1024.0;
        break;
      default:
        used = 0;
    }
    if (used != 0) ++used;
  }
  if (used != text.size() || !(value > 0)) {
    throw core::InputError(
        "command line", option,
        fmt::format("got \"{}\"; expected a positive size in bytes, with an optional K, M or G "
                    "suffix",
                    text));
  }
  return value * scale;
}

CLI::App* add_nccl_tests_command(CLI::App& app, NcclTestsOptions& o) {
  CLI::App* cmd =
      app.add_subcommand("nccl-tests", "Print the nccl-tests table a collective would produce on a cluster");
  add_cluster_options(cmd, o.cluster);
  std::vector<std::string> names;
  for (const auto& [name, kind] : operations()) names.push_back(name);
  cmd->add_option("--op", o.op, "Collective")->check(CLI::IsMember(names));
  cmd->add_option("--min-bytes,-b", o.min_bytes, "Smallest size (K, M, G suffixes)");
  cmd->add_option("--max-bytes,-e", o.max_bytes, "Largest size (K, M, G suffixes)");
  cmd->add_option("--factor,-f", o.factor, "Size multiplier between rows")->check(CLI::Range(1.0001, 1e6));
  cmd->add_option("--type", o.type, "Element type");
  cmd->add_option("--format", o.format, "Output format")->check(CLI::IsMember({"text", "json"}));
  cmd->add_option("--network", o.network, "Network fidelity level: analytic (default) or flow (SimGrid)")
      ->check(CLI::IsMember({"analytic", "flow"}));
  cmd->add_option("--algo", o.algo, "All-reduce algorithm, as NCCL_ALGO (default auto: NCCL-like choice)")
      ->check(CLI::IsMember({"auto", "ring", "tree", "hierarchical", "nvls", "halving_doubling"}));
  cmd->add_option("--proto", o.proto, "Protocol, as NCCL_PROTO (default auto: NCCL-like choice)")
      ->check(CLI::IsMember({"auto", "ll", "ll128", "simple"}));
  return cmd;
}

void add_cluster_options(CLI::App* cmd, ClusterOptions& o) {
  cmd->add_option("--node", o.request.node, "Node profile id (hardware_profiles/nodes)")->required();
  cmd->add_option("--nodes", o.request.nodes, "Number of nodes")->required()->check(positive_number());
  cmd->add_option("--ranks-per-node", o.ranks_per_node, "Ranks per node (default: the node's GPUs)")
      ->check(positive_number());
  cmd->add_option("--fabric", o.fabric, "Fabric profile id (default: the node's)");
  cmd->add_option("--nic-gbps", o.nic_gbps, "Line rate per NIC in Gb/s (default: the node's)")
      ->check(positive_number());
  cmd->add_option("--nics-per-node", o.nics_per_node, "NICs per node (default: the node's)")
      ->check(positive_number());
}

ResolvedCluster resolve_cluster(const ClusterOptions& o) {
  config::ClusterRequest request = o.request;
  if (!o.fabric.empty()) request.fabric = o.fabric;
  if (o.nic_gbps > 0) request.nic_gbps = o.nic_gbps;
  if (o.nics_per_node > 0) request.nics_per_node = o.nics_per_node;
  ResolvedCluster out{config::load_cluster(request, "command line", config::default_data_paths()), 0};
  const config::NodeProfile& node = out.cluster.node;
  out.ranks_per_node = o.ranks_per_node > 0 ? o.ranks_per_node : node.gpus_per_node;
  if (out.ranks_per_node > node.gpus_per_node) {
    throw core::InputError(
        "command line", "/ranks-per-node",
        fmt::format("got {}; a {} node has {} GPUs", out.ranks_per_node, node.id, node.gpus_per_node));
  }
  return out;
}

int nccl_tests_command(const NcclTestsOptions& o, std::ostream& out) {
  const ResolvedCluster resolved = resolve_cluster(o.cluster);
  config::Scenario cluster = resolved.cluster;
  if (o.network == "flow") cluster.simulation.network = config::NetworkFidelity::flow;
  for (const auto a : {config::AllReduceAlgorithm::automatic, config::AllReduceAlgorithm::ring,
                       config::AllReduceAlgorithm::tree, config::AllReduceAlgorithm::hierarchical,
                       config::AllReduceAlgorithm::nvls, config::AllReduceAlgorithm::halving_doubling}) {
    if (o.algo == config::to_string(a)) cluster.cluster.network.all_reduce_algorithm = a;
  }
  for (const auto p : {config::CollectiveProtocol::automatic, config::CollectiveProtocol::ll,
                       config::CollectiveProtocol::ll128, config::CollectiveProtocol::simple}) {
    if (o.proto == config::to_string(p)) cluster.cluster.network.protocol = p;
  }
  const std::int64_t per_node = resolved.ranks_per_node;
  graph::CollectiveKind kind = graph::CollectiveKind::all_reduce;
  for (const auto& [name, k] : operations()) {
    if (name == o.op) kind = k;
  }
  const double element = type_bytes(o.type);
  const double min_bytes = parse_size(o.min_bytes, "/min-bytes");
  const double max_bytes = parse_size(o.max_bytes, "/max-bytes");
  if (max_bytes < min_bytes) {
    throw core::InputError(
        "command line", "/max-bytes",
        fmt::format("got {}; expected at least --min-bytes ({})", o.max_bytes, o.min_bytes));
  }
  graph::CommGroup group{cluster.cluster.nodes * per_node, cluster.cluster.nodes, 1};
  const auto model = network::make_network_model(cluster);
  reports::NcclTestsTable table;
  table.op = o.op;
  table.type = o.type;
  table.redop = kind == graph::CollectiveKind::all_gather || kind == graph::CollectiveKind::all_to_all ||
                        kind == graph::CollectiveKind::broadcast
                    ? "none"
                    : "sum";
  table.ranks = group.size;
  table.title =
      fmt::format("dtsim {} ({} model): {} on {} x {} = {} ranks ({} per node), {} {} x {:g} Gb/s per node",
                  DTSIM_VERSION, model->name(), o.op, cluster.cluster.nodes, cluster.node.id, group.size,
                  per_node, cluster.cluster.network.fabric, cluster.cluster.network.nics_per_node,
                  cluster.cluster.network.nic_gbps);
  if (o.algo != "auto" || o.proto != "auto")
    table.title += fmt::format(", algorithm {}, protocol {}", o.algo, o.proto);
  table.rows = network::predict_nccl_tests(
      *model, kind, group, network::nccl_tests_sizes(min_bytes, max_bytes, o.factor, element), element);
  if (!table.rows.empty()) {
    table.note = config::extrapolation_note(cluster.fabric, cluster.cluster.nodes, table.rows.front().size_bytes,
                                            table.rows.back().size_bytes);
  }
  std::ostringstream text;
  if (o.format == "json") {
    reports::write_nccl_tests_json(text, table,
                                   {{"node", cluster.node.id},
                                    {"nodes", cluster.cluster.nodes},
                                    {"ranks_per_node", per_node},
                                    {"fabric", cluster.cluster.network.fabric},
                                    {"op", o.op},
                                    {"type", o.type},
                                    {"min_bytes", o.min_bytes},
                                    {"max_bytes", o.max_bytes},
                                    {"factor", o.factor},
                                    {"network", o.network},
                                    {"algo", o.algo},
                                    {"proto", o.proto}});
  } else {
    reports::write_nccl_tests_text(text, table);
  }
  out << text.str();
  return kExitOk;
}

}  // namespace dtsim::cli
