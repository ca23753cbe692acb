#include "reports/compare_report.hpp"

#include <algorithm>
#include <functional>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/units.hpp"
#include "reports/output_envelope.hpp"
#include "reports/reports.hpp"

namespace dtsim::reports {

namespace {

using results::Result;

// Which scenarios a row is about; shown when one of the compared scenarios is. samples: a DLRM or a
// layer table (models counted in samples); input: a scenario with an input pipeline.
enum class Applies { all, split, dlrm, samples, input };

struct Row {
  std::string label;
  std::function<std::string(const Result&)> cell;
  bool needs_ok = false;           // blank for infeasible plans that never ran
  bool failures = false;           // shown when a scenario states failures (its goodput)
  Applies applies = Applies::all;  // split: a transformer's or layer table's parallel plan; dlrm: embeddings
};

std::string seconds(double s) { return fmt::format("{:.4f}", s); }
std::string share(double part, double whole) {
  return whole > 0 ? fmt::format("{:.1f}%", 100 * part / whole) : "-";
}

const std::vector<Row>& rows() {
  static const std::vector<Row> all{
      {"status", [](const Result& r) { return std::string(results::to_string(r.status)); }},
      {"GPUs", [](const Result& r) { return std::to_string(r.scenario.gpu_count()); }},
      {"DP x TP x PP x CP",
       [](const Result& r) {
         const auto& p = r.scenario.parallelism;
         return fmt::format("{}x{}x{}x{}", p.data, p.tensor, p.pipeline, p.context);
       }},
      {"schedule",
       [](const Result& r) {
         const auto& p = r.scenario.parallelism;
         std::string text = p.virtual_stages > 1
                                ? fmt::format("{} v{}", config::to_string(p.schedule), p.virtual_stages)
                                : std::string(config::to_string(p.schedule));
         if (p.expert_comm_overlap) text += p.delay_wgrad_compute ? " combined dW" : " combined";
         return text;
       },
       false, false, Applies::split},
      {"micro-batch", [](const Result& r) { return std::to_string(r.scenario.training.micro_batch_size); },
       false, false, Applies::split},
      {"recompute",
       [](const Result& r) {
         return std::string(config::to_string(r.scenario.training.activation_recompute));
       },
       false, false, Applies::split},
      {"ZeRO / dist. optimizer",
       [](const Result& r) {
         const auto& p = r.scenario.parallelism;
         return fmt::format("{} / {}", config::zero_stage_label(p), p.distributed_optimizer ? "yes" : "no");
       },
       false, false, Applies::split},
      {"embedding sharding",
       [](const Result& r) {
         const auto& e = r.scenario.parallelism.embeddings;
         if (!r.scenario.dlrm) return std::string("-");
         // Tables on parameter servers are not sharded over the GPUs.
         const std::string how = e.placement == config::EmbeddingPlacement::remote
                                     ? std::string("on the servers")
                                     : std::string(config::to_string(e.sharding));
         return e.per_table.empty() ? how : fmt::format("{} (+{} own)", how, e.per_table.size());
       },
       false, false, Applies::dlrm},
      {"embedding placement",
       [](const Result& r) {
         const auto& e = r.scenario.parallelism.embeddings;
         if (!r.scenario.dlrm) return std::string("-");
         const std::string where = e.placement == config::EmbeddingPlacement::host_cached
                                       ? fmt::format("host, {:.0f}% cached", 100 * e.cache_fraction)
                                       : std::string(config::to_string(e.placement));
         return e.per_table_placement.empty() ? where
                                              : fmt::format("{} (+{} own)", where, e.per_table_placement.size());
       },
       false, false, Applies::dlrm},
      {"iteration (s)", [](const Result& r) { return seconds(r.iteration_time_s); }, true},
      {"  error band",
       [](const Result& r) {
         return r.expected_error ? results::band_range(*r.expected_error) : std::string("-");
       },
       true},
      {"samples/s", [](const Result& r) { return fmt::format("{:.0f}", r.throughput.samples_per_s); }, true,
       false, Applies::samples},
      {"tokens/s", [](const Result& r) { return fmt::format("{:.0f}", r.throughput.tokens_per_s); }, true,
       false, Applies::split},
      {"model TFLOP/s/GPU",
       [](const Result& r) { return fmt::format("{:.1f}", r.flops.model_tflops_per_gpu); }, true},
      {"MFU", [](const Result& r) { return fmt::format("{:.1f}%", 100 * r.flops.mfu); }, true},
      {"HFU", [](const Result& r) { return fmt::format("{:.1f}%", 100 * r.flops.hfu); }, true},
      {"  compute", [](const Result& r) { return share(r.breakdown.compute_s(), r.iteration_time_s); }, true},
      {"  optimizer", [](const Result& r) { return share(r.breakdown.optimizer_s, r.iteration_time_s); },
       true},
      {"  exposed comm",
       [](const Result& r) { return share(r.breakdown.exposed_comm_s(), r.iteration_time_s); }, true},
      {"  pipeline bubble",
       [](const Result& r) { return share(r.breakdown.pipeline_bubble_s, r.iteration_time_s); }, true},
      {"lookup imbalance",
       [](const Result& r) {
         const auto& e = r.embeddings;
         return e && e->ids_per_gpu_mean > 0 ? fmt::format("{:.2f}", e->ids_per_gpu_max / e->ids_per_gpu_mean)
                                             : std::string("-");
       },
       true, false, Applies::dlrm},
      {"ids served from HBM",
       [](const Result& r) {
         return r.embeddings ? fmt::format("{:.1f}%", 100 * r.embeddings->cache_hit_rate) : std::string("-");
       },
       true, false, Applies::dlrm},
      {"  waiting for the host",
       [](const Result& r) { return share(r.breakdown.host_wait_s, r.iteration_time_s); }, true},
      {"  waiting for input data",
       [](const Result& r) { return share(r.breakdown.data_stall_s, r.iteration_time_s); }, true, false,
       Applies::input},
      {"input (samples/s)",
       [](const Result& r) {
         return r.input && !r.input->limited_by.empty() ? fmt::format("{:.0f}", r.input->samples_per_s)
                                                        : std::string("-");
       },
       true, false, Applies::input},
      {"input limited by",
       [](const Result& r) {
         return r.input && !r.input->limited_by.empty() ? r.input->limited_by : std::string("-");
       },
       true, false, Applies::input},
      {"memory/GPU (GiB)",
       [](const Result& r) {
         return fmt::format("{:.1f} of {:.0f}", r.memory.peak_bytes_per_gpu / core::kGiB,
                            r.memory.capacity_bytes_per_gpu / core::kGiB);
       }},
      {"fits", [](const Result& r) { return std::string(r.memory.fits ? "yes" : "no"); }},
      {"days with failures (p50)",
       [](const Result& r) {
         const auto& g = r.goodput;
         if (!g) return std::string("-");
         return g->reason.empty() ? fmt::format("{:.2f}", g->wall_s.p50 / core::kSecondsPerDay)
                                  : std::string("no finish");
       },
       true, true},
      {"  goodput (p50)",
       [](const Result& r) {
         const auto& g = r.goodput;
         return g && g->reason.empty() ? fmt::format("{:.1f}%", 100 * g->goodput.p50) : std::string("-");
       },
       true, true},
  };
  return all;
}

// Column headers: the scenario names without the words they all start with.
std::vector<std::string> headers(const std::vector<Result>& results) {
  std::vector<std::string> names;
  for (const auto& r : results) names.push_back(r.scenario.name);
  if (names.size() < 2) return names;
  std::size_t common = names.front().size();
  for (const auto& n : names) {
    std::size_t i = 0;
    while (i < common && i < n.size() && n[i] == names.front()[i]) ++i;
    common = i;
  }
  const std::size_t cut = names.front().rfind(' ', common);
  if (cut == std::string::npos || cut == 0) return names;
  for (auto& n : names) n = n.size() > cut + 1 ? n.substr(cut + 1) : n;
  return names;
}

}  // namespace

void write_compare_text(std::ostream& out, const std::vector<Result>& results) {
  const std::vector<std::string> names = headers(results);
  const bool failures =
      std::any_of(results.begin(), results.end(), [](const Result& r) { return r.goodput.has_value(); });
  const bool dlrm = std::any_of(results.begin(), results.end(),
                                [](const Result& r) { return r.scenario.dlrm.has_value(); });
  const bool split =
      std::any_of(results.begin(), results.end(), [](const Result& r) { return !r.scenario.dlrm; });
  const bool samples = std::any_of(results.begin(), results.end(), [](const Result& r) {
    return r.scenario.dlrm.has_value() || r.scenario.layer_model.has_value();
  });
  const bool input = std::any_of(results.begin(), results.end(),
                                 [](const Result& r) { return r.scenario.input.has_value(); });
  std::vector<const Row*> shown;
  for (const auto& row : rows()) {
    const bool applies = row.applies == Applies::all || (row.applies == Applies::dlrm && dlrm) ||
                         (row.applies == Applies::split && split) ||
                         (row.applies == Applies::samples && samples) || (row.applies == Applies::input && input);
    if ((!row.failures || failures) && applies) shown.push_back(&row);
  }
  std::size_t label_width = 0;
  for (const Row* row : shown) label_width = std::max(label_width, row->label.size());
  std::vector<std::size_t> widths;
  std::vector<std::vector<std::string>> cells;
  for (std::size_t i = 0; i < results.size(); ++i) {
    const Result& r = results[i];
    std::vector<std::string> column{names[i]};
    for (const Row* row : shown) {
      const bool blank = row->needs_ok && r.status != results::Status::ok && r.iteration_time_s <= 0;
      column.push_back(blank ? "-" : row->cell(r));
    }
    std::size_t w = 0;
    for (const auto& c : column) w = std::max(w, c.size());
    widths.push_back(std::min<std::size_t>(w, 40));
    cells.push_back(std::move(column));
  }
  for (std::size_t line = 0; line <= shown.size(); ++line) {
    out << fmt::format("{:<{}}", line == 0 ? "" : shown[line - 1]->label, label_width);
    for (std::size_t c = 0; c < cells.size(); ++c) {
      std::string text = cells[c][line];
      if (text.size() > widths[c]) text = text.substr(0, widths[c] - 1) + "~";
      out << fmt::format("  {:>{}}", text, widths[c]);
    }
    out << "\n";
  }
  for (const auto& r : results) {
    if (r.status != results::Status::ok) out << fmt::format("{}: {}\n", r.scenario.name, r.reason);
  }
}

void write_compare_json(std::ostream& out, const std::vector<Result>& results,
                        const std::vector<std::string>& scenarios) {
  nlohmann::ordered_json j = output_envelope("compare", {{"scenarios", scenarios}});
  nlohmann::ordered_json& list = j["results"] = nlohmann::ordered_json::array();
  for (const auto& r : results) list.push_back(result_json(r));
  out << j.dump(2) << "\n";
}

}  // namespace dtsim::reports
