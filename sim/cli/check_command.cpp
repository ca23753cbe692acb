// `dtsim check SCENARIO`: load and validate a scenario without simulating it, and say in one line what
// it describes.
#include <ostream>

#include <fmt/format.h>

#include "cli/cli.hpp"
#include "cli/commands.hpp"
#include "config/layer_table_loader.hpp"

namespace dtsim::cli {

CLI::App* add_check_command(CLI::App& app, CheckOptions& options) {
  CLI::App* check =
      app.add_subcommand("check", "Validate a scenario (with its presets and hardware profiles)");
  check->add_option("scenario", options.scenario, "Scenario v1 JSON file, or - to read standard input")
      ->required()
      ->type_name("FILE");
  return check;
}

int check_command(const CheckOptions& options, std::istream& in, std::ostream& out) {
  const config::Scenario s = read_scenario(options.scenario, in);
  const config::ParallelismSpec& p = s.parallelism;
  std::string model = !s.model.preset.empty() ? s.model.preset : config::to_string(s.model.kind);
  std::size_t layers = static_cast<std::size_t>(s.model.layers);
  if (s.layer_model) {
    model = fmt::format("{}, {}, {}", s.layer_model->id, config::to_string(s.data_parallel.architecture),
                        config::to_string(s.data_parallel.sync));
    layers = s.layer_model->layers.size();
  }
  if (s.dlrm) {
    model = fmt::format("{}, {} tables {} in {}", s.dlrm->preset.empty() ? "dlrm" : s.dlrm->preset, s.dlrm->tables.size(),
                        config::to_string(p.embeddings.sharding), config::to_string(p.embeddings.placement));
    layers = s.dlrm->bottom_mlp.size() + s.dlrm->top_mlp.size();
  }
  const std::string nodes =
      s.cluster.gpus ? fmt::format("{} x {} of {} GPUs of {}", s.cluster.nodes, s.node.gpus_per_node,
                                   s.cluster.node_gpus, s.cluster.node_id)
                     : fmt::format("{} x {}", s.cluster.nodes, s.cluster.node_id);
  out << fmt::format("ok: {}: {}: {} GPUs ({}, {}), DP {} x TP {} x PP {} x CP {}, {} ({} layers)\n",
                     options.scenario, s.name, s.gpu_count(), nodes, s.gpu.id,
                     p.data, p.tensor, p.pipeline, p.context, model, layers);
  return kExitOk;
}

}  // namespace dtsim::cli
