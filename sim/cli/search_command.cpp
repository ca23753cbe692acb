// dtsim search SCENARIO: the fastest plans for the scenario's model, cluster and batch (search.hpp).
#include <sstream>
#include <thread>

#include "cli/cli.hpp"
#include "config/accuracy.hpp"
#include "config/scenario_loader.hpp"
#include "cli/commands.hpp"
#include "cli/output_files.hpp"
#include "cli/positive_number.hpp"
#include "cli/report_option.hpp"
#include "core/errors.hpp"
#include "reports/search_report.hpp"
#include "results/evaluate.hpp"
#include "search/embedding_search.hpp"
#include "search/search.hpp"

namespace dtsim::cli {

void add_space_options(CLI::App* cmd, search::SpaceBounds& b) {
  cmd->add_option("--max-tensor", b.max_tensor,
                  "Largest tensor degree (powers of two; default: GPUs per node)")
      ->check(positive_number());
  cmd->add_option("--max-pipeline", b.max_pipeline, "Largest pipeline degree (default: layers)")
      ->check(positive_number());
  cmd->add_option("--max-context", b.max_context, "Largest context degree (powers of two)")
      ->capture_default_str()
      ->check(positive_number());
  cmd->add_option("--max-micro-batch", b.max_micro_batch, "Largest micro-batch size (powers of two)")
      ->capture_default_str()
      ->check(positive_number());
  cmd->add_option("--max-virtual-stages", b.max_virtual_stages, "Largest virtual stages per pipeline stage")
      ->capture_default_str()
      ->check(positive_number());
  cmd->add_flag("--keep-recompute", b.keep_recompute, "Only the scenario's activation recompute");
  cmd->add_flag("--keep-sharding", b.keep_sharding,
                "Only the scenario's ZeRO stage and distributed optimizer");
  cmd->add_flag("--keep-sequence-parallel", b.keep_sequence_parallel,
                "Only the scenario's sequence parallelism");
  cmd->add_flag("--keep-expert", b.keep_expert,
                "Only the scenario's expert-parallel degree (mixture-of-experts models)");
  cmd->add_flag(
      "--keep-schedule", b.keep_schedule,
      "Only the scenario's pipeline schedule where there are no virtual stages (else 1F1B and zb-h1), and "
      "its combined 1F1B setting (else with and without, for a mixture of experts)");
  cmd->add_option("--min-headroom", b.min_headroom_gib,
                  "GiB of GPU memory a plan must leave free (allocator fragmentation, NCCL buffers, CUDA context)")
      ->check(CLI::Range(0.0, 1e6));
}

CLI::App* add_search_command(CLI::App& app, SearchCommandOptions& o) {
  CLI::App* cmd =
      app.add_subcommand("search", "Rank the parallel plans of a scenario's model on its cluster");
  cmd->add_option("scenario", o.scenario, "Scenario v1 JSON file, or - for standard input")->required();
  cmd->add_option("--top", o.top, "Plans to list")->capture_default_str()->check(positive_number());
  cmd->add_option("--jobs,-j", o.jobs, "Worker threads (default: all cores)")->check(positive_number());
  cmd->add_option("--format", o.format, "Output format")->check(CLI::IsMember({"text", "json", "csv"}));
  cmd->add_option("--out", o.out_path, "Write to FILE instead of standard output");
  cmd->add_flag("--exact", o.exact, "Simulate every micro-batch of each plan (no extrapolation)");
  cmd->add_flag("--no-timing", o.no_timing,
                "Report wall times, speed and thread count as 0 (identical bytes on every run)");
  add_report_option(cmd, o.report_path);
  add_space_options(cmd, o.bounds);
  return cmd;
}

std::size_t worker_threads(int jobs) {
  if (jobs > 0) return static_cast<std::size_t>(jobs);
  return std::max(1U, std::thread::hardware_concurrency());
}

reports::Format output_format(const std::string& format) {
  if (format == "json") return reports::Format::json;
  if (format == "csv") return reports::Format::csv;
  return reports::Format::text;
}

void write_output(const std::string& text, const std::string& out_path, std::ostream& out) {
  if (out_path.empty()) {
    write_stream(out, text);
    return;
  }
  write_files({{out_path, text}});
}

void zero_timing(search::SearchOutcome& outcome) {
  outcome.enumerate_wall_s = outcome.evaluate_wall_s = outcome.evaluate_cpu_s =
      outcome.configs_per_s_per_core = outcome.confirm_cpu_s = outcome.bound_cpu_s =
          outcome.considered_per_s_per_core = 0.0;
  outcome.jobs = 0;
  for (auto& e : outcome.top) e.result.engine.wall_s = 0.0;
}

// The ranked plans as report entries; the knobs are the choices that tell the plans apart.
static results::ReportData search_report_data(const config::Scenario& base,
                                              const search::SearchOutcome& outcome) {
  results::ReportData data{
      .title = "Fastest plans for " + (base.name.empty() ? std::string("the scenario") : base.name),
      .kind = results::ReportKind::search};
  for (const search::SearchEntry& e : outcome.top) {
    const config::ParallelismSpec& p = e.result.scenario.parallelism;
    const config::TrainingSpec& t = e.result.scenario.training;
    std::vector<results::Knob> knobs;
    if (base.dlrm) {
      knobs = {{"sharding", config::to_string(p.embeddings.sharding)},
               {"tables sharded otherwise", std::to_string(p.embeddings.per_table.size())},
               {"placement", config::to_string(p.embeddings.placement)}};
    } else {
      knobs = {{"tensor", std::to_string(p.tensor)},
               {"pipeline", std::to_string(p.pipeline)},
               {"data", std::to_string(p.data)},
               {"context", std::to_string(p.context)},
               {"virtual_stages", std::to_string(p.virtual_stages)},
               {"micro_batch_size", std::to_string(t.micro_batch_size)},
               {"activation_recompute", config::to_string(t.activation_recompute)},
               {"sequence_parallel", p.sequence_parallel ? "true" : "false"},
               {"zero_stage", std::to_string(p.zero_stage)},
               {"distributed_optimizer", p.distributed_optimizer ? "true" : "false"}};
    }
    data.entries.push_back({.label = "#" + std::to_string(e.rank) + " " + e.label, .knobs = knobs, .result = e.result});
  }
  return data;
}

int search_command(const SearchCommandOptions& o, std::istream& in, std::ostream& out) {
  check_outputs({{"--out", o.out_path}, {"--report", o.report_path}}, {o.scenario});
  const config::Scenario base = read_scenario(o.scenario, in);
  // The search space is the transformer's split (tensor, pipeline, context, data, recompute, sharding), or a
  // DLRM's embedding plans (embedding_search.hpp).
  if (base.layer_model || (!base.dlrm && base.model.kind != config::ModelKind::transformer)) {
    throw core::InputError(o.scenario, "/model",
                           "search ranks parallel plans of transformer models and embedding plans of DLRM models; "
                           "this scenario's model is " +
                               std::string(base.layer_model ? "a layer table (data-parallel only)" : "an MLP") +
                               ": use dtsim run or dtsim sweep instead");
  }
  if (base.training.measured_single_gpu) {
    throw core::InputError(
        o.scenario, "/training/measured_single_gpu",
        "a one-GPU measurement holds for one micro-batch size, which search varies; expected no "
        "such key (run the chosen plan with it)");
  }
  search::SearchOptions options;
  options.bounds = o.bounds;
  options.top = static_cast<std::size_t>(o.top);
  options.jobs = worker_threads(o.jobs);
  options.extrapolate = !o.exact;
  search::SearchOutcome outcome =
      base.dlrm ? search::search_embedding_plans(base, options) : search::search(base, options);
  if (o.no_timing) zero_timing(outcome);
  const auto regimes = config::load_accuracy(config::default_data_paths().hardware_profiles);
  for (search::SearchEntry& e : outcome.top) results::state_expected_error(e.result, regimes);
  std::ostringstream text;
  reports::write_search(text, base, outcome, output_format(o.format),
                        {{"scenario", o.scenario}, {"top", o.top}, {"exact", o.exact}});
  // The report and --out are opened before either is written: one bad path leaves no file behind.
  std::vector<OutputFile> files;
  if (!o.report_path.empty()) {
    files.push_back({o.report_path, render_report(o.report_path, search_report_data(base, outcome))});
  }
  if (!o.out_path.empty()) files.push_back({o.out_path, text.str()});
  write_files(files);
  if (o.out_path.empty()) write_stream(out, text.str());
  return outcome.top.empty() ? kExitInfeasible : kExitOk;
}

}  // namespace dtsim::cli
