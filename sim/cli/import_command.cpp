// dtsim import nccl-tests LOG... : fit a link's efficiency and latency to measured nccl-tests
// all-reduce logs and write a hardware profile that scenarios can use: a fabric profile for logs that
// span nodes, a node profile (the given node with its intra-node link refitted) for one-node logs.
#include <filesystem>
#include <sstream>

#include <fmt/format.h>

#include "calibration/fit_network.hpp"
#include "calibration/nccl_log.hpp"
#include "cli/cli.hpp"
#include "cli/commands.hpp"
#include "cli/output_files.hpp"
#include "config/scenario_loader.hpp"
#include "core/errors.hpp"
#include "reports/profile_json.hpp"

namespace dtsim::cli {

CLI::App* add_import_command(CLI::App& app, ImportNcclOptions& o) {
  CLI::App* import = app.add_subcommand("import", "Turn measurements into hardware profiles");
  import->require_subcommand(1);
  CLI::App* cmd = import->add_subcommand("nccl-tests", "Fit a fabric (or intra-node link) to nccl-tests all-reduce logs");
  cmd->add_option("logs", o.logs, "nccl-tests all_reduce_perf output files")->required()->check(CLI::ExistingFile);
  add_cluster_options(cmd, o.cluster);  // the cluster the logs ran on
  cmd->add_option("--id", o.id, "Id of the written profile (also its file name)")->required();
  cmd->add_option("--out", o.out_path, "Profile file to write")->required();
  cmd->add_option("--min-bytes", o.min_bytes, "Fit rows of at least this size (K, M, G suffixes)");
  return cmd;
}

int import_nccl_command(const ImportNcclOptions& o, std::ostream& out) {
  check_outputs({{"--out", o.out_path}}, o.logs);
  const ResolvedCluster resolved = resolve_cluster(o.cluster);
  const config::Scenario& cluster = resolved.cluster;
  const int per_node = static_cast<int>(resolved.ranks_per_node);
  std::vector<calibration::NcclLog> logs;
  for (const auto& path : o.logs) logs.push_back(calibration::read_nccl_log(path));
  for (const auto& log : logs) {
    if (log.ranks && *log.ranks != per_node * cluster.cluster.nodes && *log.ranks != per_node) {
      throw core::InputError(log.file, "",
                             fmt::format("the log lists {} ranks; --nodes {} x {} ranks per node make {}", *log.ranks,
                                         cluster.cluster.nodes, per_node, per_node * cluster.cluster.nodes));
    }
  }
  const double min_bytes = parse_size(o.min_bytes, "/min-bytes");
  const calibration::LinkFit fit = [&] {
    try {
      return calibration::fit_all_reduce(logs, cluster, per_node, min_bytes);
    } catch (const core::InputError& e) {
      if (!e.file().empty()) throw;
      // Too few rows at or above --min-bytes: name the logs' first file and the option.
      throw core::InputError(o.logs.front(), "/min-bytes",
                             fmt::format("{} (--min-bytes {})", e.message(), o.min_bytes));
    }
  }();
  if (!(fit.efficiency > 0.0 && fit.efficiency <= 1.0)) {
    throw core::InputError(o.logs.front(), "",
                           fmt::format("the fitted efficiency {:.3f} is outside (0, 1]: the layout given with --node, "
                                       "--nodes and --ranks-per-node does not match the log",
                                       fit.efficiency));
  }
  std::string files;
  for (const auto& path : o.logs) files += (files.empty() ? "" : ", ") + std::filesystem::path(path).filename().string();
  const std::string latency_how =
      fit.target == calibration::FitTarget::intra_node
          ? std::string()
          : (fit.latency_rows > 0 ? fmt::format("; latency on the {} rows of 1 B-64 KiB, fit error {:.1f}%",
                                                fit.latency_rows, fit.latency_mape)
                                  : std::string("; no rows of 1 B-64 KiB: latency kept from the fabric profile"));
  const std::string how = fmt::format(
      "fitted by dtsim import nccl-tests to {} ({} ranks: {} x {}, {} per node; {} all-reduce; {} rows of at least {} "
      "bytes, least squares on relative time through the network model, fit error {:.1f}%{})",
      files, per_node * cluster.cluster.nodes, cluster.cluster.nodes, cluster.node.id, per_node, fit.algorithm,
      fit.fit.rows, o.min_bytes, fit.fit.mape, latency_how);

  nlohmann::ordered_json profile;
  if (fit.target == calibration::FitTarget::fabric) {
    config::FabricProfile fabric = cluster.fabric;
    fabric.id = o.id;
    fabric.name = fmt::format("{} (fitted to {})", cluster.fabric.name, files);
    fabric.efficiency = fit.efficiency;
    fabric.latency_us = fit.latency_us;
    fabric.per_message_overhead_us = 0.0;
    fabric.per_flow_gbps.reset();
    fabric.fitted_on =
        config::FittedRange{cluster.cluster.nodes, cluster.cluster.nodes, fit.smallest_bytes, fit.largest_bytes};
    reports::Sources sources{{"efficiency", how + fmt::format("; relative to {} x {:g} Gb/s per node",
                                                            cluster.cluster.network.nics_per_node,
                                                            cluster.cluster.network.nic_gbps)},
                             {"latency_us", how + "; per network hop (Simple protocol), message overhead included"},
                             {"per_message_overhead_us", "0: folded into latency_us by the fit"},
                             {"fitted_on", fmt::format("the node count and message sizes of {}: predictions at other "
                                                       "node counts or sizes extrapolate the per-hop model",
                                                       files)}};
    profile = reports::fabric_profile_json(fabric, sources);
  } else {
    config::NodeProfile node = cluster.node;
    node.id = o.id;
    node.name = fmt::format("{} (intra-node link fitted to {})", cluster.node.name, files);
    node.intra_efficiency = fit.efficiency;
    node.intra_latency_us = fit.latency_us;
    const std::string copied = fmt::format("copied from node profile {} (see its sources)", cluster.node.id);
    reports::Sources sources{{"gpu", copied},     {"gpus_per_node", copied}, {"network", copied},
                             {"host_memory_bytes", copied},
                             {"intra_node", fmt::format("efficiency and latency_us {}; kind and gbytes_per_s {}", how,
                                                        copied)}};
    profile = reports::node_profile_json(node, sources);
  }
  write_files({{o.out_path, profile.dump(2) + "\n"}});  // "wrote" only once the file is complete
  out << fmt::format("wrote {} ({} profile \"{}\"): efficiency {:.3f}, latency {:.2f} us per {} ({}; fit error {:.1f}% "
                     "over {} rows{})\n",
                     o.out_path, fit.target == calibration::FitTarget::fabric ? "fabric" : "node", o.id, fit.efficiency,
                     fit.latency_us, fit.target == calibration::FitTarget::fabric ? "hop" : "step", fit.algorithm,
                     fit.fit.mape, fit.fit.rows,
                     fit.latency_rows > 0 ? fmt::format(", latency {:.1f}% over {} rows", fit.latency_mape,
                                                        fit.latency_rows)
                                          : std::string());
  return kExitOk;
}

}  // namespace dtsim::cli
