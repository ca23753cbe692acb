#include "reports/dlrm_report.hpp"

#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/units.hpp"
#include "models/dlrm/dlrm.hpp"
#include "reports/input_report.hpp"

namespace dtsim::reports {

// Named, not anonymous: unity builds put several files in one translation unit.
namespace dlrm_text {

constexpr int kLabelWidth = 13;

void line(std::ostream& out, const char* label, const std::string& text) {
  out << fmt::format("{:<{}}{}\n", label, kLabelWidth, text);
}

std::string widths(const std::vector<std::int64_t>& w) { return fmt::format("{}", fmt::join(w, "-")); }

}  // namespace dlrm_text

nlohmann::ordered_json dlrm_model_json(const config::DlrmSpec& m) {
  nlohmann::ordered_json j;
  j["kind"] = "dlrm";
  j["dense_features"] = m.dense_features;
  j["bottom_mlp"] = m.bottom_mlp;
  j["top_mlp"] = m.top_mlp;
  j["interaction"] = config::to_string(m.interaction);
  if (m.interaction == config::Interaction::dcn_v2) {
    j["dcn_layers"] = m.dcn_layers;
    j["dcn_low_rank"] = m.dcn_low_rank;
  }
  j["embedding_precision"] = config::to_string(m.embedding_precision);
  nlohmann::ordered_json tables = nlohmann::ordered_json::array();
  for (const config::EmbeddingTable& t : m.tables) {
    nlohmann::ordered_json e;
    e["name"] = t.name;
    e["rows"] = t.rows;
    e["dim"] = t.dim;
    e["pooling"] = t.pooling;
    if (t.zipf_exponent > 0.0) e["zipf_exponent"] = t.zipf_exponent;
    tables.push_back(std::move(e));
  }
  j["tables"] = std::move(tables);
  return j;
}

nlohmann::ordered_json embedding_plan_json(const config::EmbeddingPlan& p, const config::DlrmSpec& model) {
  nlohmann::ordered_json j;
  j["sharding"] = config::to_string(p.sharding);
  if (!p.per_table.empty()) {
    nlohmann::ordered_json per = nlohmann::ordered_json::object();
    for (const auto& [name, how] : p.per_table) per[name] = config::to_string(how);
    j["per_table"] = std::move(per);
  }
  j["placement"] = config::to_string(p.placement);
  if (!p.per_table_placement.empty()) {
    nlohmann::ordered_json per = nlohmann::ordered_json::object();
    for (const auto& [name, where] : p.per_table_placement) per[name] = config::to_string(where);
    j["per_table_placement"] = std::move(per);
  }
  if (p.any_rows(model, config::EmbeddingPlacement::host_cached)) j["cache_fraction"] = p.cache_fraction;
  j["column_shard_dim"] = p.column_shard_dim;
  j["pipelined"] = p.pipelined;
  if (const auto& srv = p.servers) {
    j["servers"] = {{"count", srv->count},
                    {"memory_gbytes", srv->memory_bytes / core::kGiga},
                    {"nic_gbps", srv->nic_gbps},
                    {"row_gbytes_per_s", srv->row_gbytes_per_s}};
    if (srv->usd_per_hour) j["servers"]["usd_per_hour"] = *srv->usd_per_hour;
  }
  return j;
}

nlohmann::ordered_json embeddings_json(const results::EmbeddingSummary& e) {
  nlohmann::ordered_json j;
  nlohmann::ordered_json tables;
  for (std::size_t k = 0; k < config::kEmbeddingShardings.size(); ++k) {
    tables[config::to_string(config::kEmbeddingShardings[k])] = e.tables[k];
  }
  j["tables"] = std::move(tables);
  j["ids_per_gpu_max"] = e.ids_per_gpu_max;
  j["ids_per_gpu_mean"] = e.ids_per_gpu_mean;
  j["hbm_bytes_max"] = e.hbm_bytes_max;
  j["host_bytes_per_node_max"] = e.host_bytes_per_node_max;
  j["cache_hit_rate"] = e.cache_hit_rate;
  j["pooled_alltoall_bytes"] = e.pooled_alltoall_bytes;
  if (const auto& r = e.remote) {
    const auto exchange = [](const models::RemoteExchange& x) {
      return nlohmann::ordered_json{{"seconds", x.seconds}, {"limited_by", x.limited_by}, {"trainer_s", x.trainer_s}};
    };
    nlohmann::ordered_json needs = nlohmann::ordered_json::array();
    for (const models::ResourceNeed& n : r->needs)
      needs.push_back({{"quantity", n.quantity}, {"stated", n.stated}, {"needed", n.needed}});
    j["remote"] = {{"tables", r->tables},
                   {"servers", r->servers},
                   {"resident_bytes", r->resident_bytes},
                   {"rows_per_gpu", r->traffic.rows},
                   {"pull_bytes_per_gpu", r->traffic.pull_in_bytes},
                   {"push_bytes_per_gpu", r->traffic.push_bytes},
                   {"pull", exchange(r->timing.pull)},
                   {"push", exchange(r->timing.push)},
                   {"needs", std::move(needs)}};
  } else {
    j["remote"] = nullptr;
  }
  return j;
}

void write_dlrm_setup_text(std::ostream& out, const config::Scenario& s) {
  const config::DlrmSpec& m = *s.dlrm;
  const std::string interaction =
      m.interaction == config::Interaction::dot
          ? std::string("dot interaction")
          : fmt::format("DCN-v2 interaction ({} layers, rank {})", m.dcn_layers, m.dcn_low_rank);
  dlrm_text::line(out, "model",
                  fmt::format("{}: DLRM, {} dense features, bottom MLP {}, top MLP {}, {}",
                              m.preset.empty() ? "dlrm" : m.preset, m.dense_features,
                              dlrm_text::widths(m.bottom_mlp), dlrm_text::widths(m.top_mlp), interaction));
  dlrm_text::line(
      out, "",
      fmt::format(
          "{} embedding tables, {:.4g} rows of {} ({}), {:.4g} ids per sample; {:.4g} dense and {:.4g} "
          "embedding parameters",
          m.tables.size(), m.embedding_rows(), m.embedding_dim(), config::to_string(m.embedding_precision),
          m.lookups_per_sample(), models::dlrm_dense_parameters(m), models::dlrm_embedding_parameters(m)));
}

void write_dlrm_plan_text(std::ostream& out, const config::Scenario& s) {
  dlrm_text::line(out, "parallelism",
                  fmt::format("DP {} (the dense layers), embedding tables sharded", s.parallelism.data));
  const config::EmbeddingPlan& p = s.parallelism.embeddings;
  std::string plan = config::to_string(p.sharding);
  if (!p.per_table.empty()) plan += fmt::format(" ({} tables sharded as per_table says)", p.per_table.size());
  switch (p.placement) {
    case config::EmbeddingPlacement::hbm:
      plan += ", rows in HBM";
      break;
    case config::EmbeddingPlacement::host:
      plan += ", rows in host memory";
      break;
    case config::EmbeddingPlacement::host_cached:
      plan += fmt::format(", rows in host memory with {:.0f}% of each shard's cached in HBM",
                          100.0 * p.cache_fraction);
      break;
    case config::EmbeddingPlacement::remote:
      plan += ", rows on parameter servers";
      break;
  }
  if (!p.per_table_placement.empty())
    plan += fmt::format(" ({} tables placed as per_table_placement says)", p.per_table_placement.size());
  if (const auto& srv = p.servers) {
    plan += fmt::format("; {} servers of {:.0f} GB, {:.0f} Gb/s, rows at {:.0f} GB/s each", srv->count,
                        srv->memory_bytes / core::kGiga, srv->nic_gbps, srv->row_gbytes_per_s);
  }
  if (p.any_rows(*s.dlrm, config::EmbeddingPlacement::remote)) {
    plan += p.pipelined ? ", rows pulled a batch ahead" : ", rows pulled before each batch's lookups";
  } else {
    plan += p.pipelined ? ", ids sent a batch ahead" : ", ids sent before each batch's lookups";
  }
  dlrm_text::line(out, "embeddings", plan);
  const config::TrainingSpec& t = s.training;
  dlrm_text::line(
      out, "training",
      fmt::format("global batch {} ({} per GPU), {} dense layers, optimizer {}, host {} us per kernel",
                  t.global_batch_size, t.global_batch_size / s.gpu_count(), config::to_string(t.precision),
                  config::to_string(t.optimizer), t.host_issue_us_per_kernel));
}

void write_embeddings_text(std::ostream& out, const results::EmbeddingSummary& e) {
  std::vector<std::string> parts;
  for (std::size_t k = 0; k < config::kEmbeddingShardings.size(); ++k) {
    if (e.tables[k] > 0)
      parts.push_back(fmt::format("{} {}", e.tables[k], config::to_string(config::kEmbeddingShardings[k])));
  }
  if (e.remote) parts.push_back(fmt::format("{} on the parameter servers", e.remote->tables));
  dlrm_text::line(out, "tables", fmt::format("{}", fmt::join(parts, ", ")));
  dlrm_text::line(
      out, "lookups",
      fmt::format("{:.4g} ids per GPU per iteration at most, {:.4g} on average (imbalance {:.2f})",
                  e.ids_per_gpu_max, e.ids_per_gpu_mean,
                  e.ids_per_gpu_mean > 0.0 ? e.ids_per_gpu_max / e.ids_per_gpu_mean : 1.0));
  dlrm_text::line(out, "shards",
                  fmt::format("{:.2f} GiB in HBM on the fullest GPU, {:.2f} GiB in host memory on the "
                              "fullest node; {:.1f}% of ids "
                              "served from HBM",
                              e.hbm_bytes_max / core::kGiB, e.host_bytes_per_node_max / core::kGiB,
                              100.0 * e.cache_hit_rate));
  if (const auto& r = e.remote) {
    const auto exchange = [](const char* what, const models::RemoteExchange& x) {
      return fmt::format("{} {:.3f} ms ({})", what, x.seconds * 1e3, x.limited_by);
    };
    dlrm_text::line(out, "servers",
                    fmt::format("{:.1f} GiB of rows and states on {} servers; per GPU {:.4g} distinct rows, {:.2f} MB "
                                "pulled and {:.2f} MB pushed: {}, {}",
                                r->resident_bytes / core::kGiB, r->servers, r->traffic.rows,
                                r->traffic.pull_in_bytes / 1e6, r->traffic.push_bytes / 1e6,
                                exchange("pull", r->timing.pull), exchange("push", r->timing.push)));
    dlrm_text::line(out, "", fmt::format("servers needed: {}", needs_text(r->needs)));
  }
}

}  // namespace dtsim::reports
