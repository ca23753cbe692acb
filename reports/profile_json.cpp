#include "reports/profile_json.hpp"

#include <array>

#include "config/scenario.hpp"

namespace dtsim::reports {

namespace {

nlohmann::ordered_json sources_json(const Sources& sources) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  for (const auto& [key, text] : sources) j[key] = text;
  return j;
}

}  // namespace

nlohmann::ordered_json fabric_profile_json(const config::FabricProfile& f, const Sources& sources) {
  nlohmann::ordered_json j;
  j["schema_version"] = 1;
  j["id"] = f.id;
  j["name"] = f.name;
  j["efficiency"] = f.efficiency;
  j["latency_us"] = f.latency_us;
  j["per_message_overhead_us"] = f.per_message_overhead_us;
  if (f.per_flow_gbps) j["per_flow_gbps"] = *f.per_flow_gbps;
  if (f.fitted_on) {
    j["fitted_on"] = {{"min_nodes", f.fitted_on->min_nodes},
                      {"max_nodes", f.fitted_on->max_nodes},
                      {"min_bytes", f.fitted_on->min_bytes},
                      {"max_bytes", f.fitted_on->max_bytes}};
  }
  j["sources"] = sources_json(sources);
  return j;
}

nlohmann::ordered_json node_profile_json(const config::NodeProfile& n, const Sources& sources) {
  nlohmann::ordered_json j;
  j["schema_version"] = 1;
  j["id"] = n.id;
  j["name"] = n.name;
  j["gpu"] = n.gpu;
  j["gpus_per_node"] = n.gpus_per_node;
  nlohmann::ordered_json intra;
  intra["kind"] = config::to_string(n.intra_kind);
  intra["gbytes_per_s"] = n.intra_gbytes_per_s;
  intra["efficiency"] = n.intra_efficiency;
  intra["latency_us"] = n.intra_latency_us;
  if (n.nvls_busbw_gbytes_per_s) intra["nvls_busbw_gbytes_per_s"] = *n.nvls_busbw_gbytes_per_s;
  if (n.intra_bandwidth_p10) intra["bandwidth_p10"] = *n.intra_bandwidth_p10;
  if (n.intra_bandwidth_p90) intra["bandwidth_p90"] = *n.intra_bandwidth_p90;
  j["intra_node"] = intra;
  j["network"] = {{"fabric", n.fabric}, {"nic_gbps", n.nic_gbps}, {"nics_per_node", n.nics_per_node}};
  j["host_memory_bytes"] = n.host_memory_bytes;
  j["sources"] = sources_json(sources);
  return j;
}

namespace {

nlohmann::ordered_json gemm_curve_json(const config::GemmCurve& c) {
  nlohmann::ordered_json j;
  j["max_efficiency"] = c.max_efficiency;
  j["tile_m"] = c.tile_m;
  j["tile_n"] = c.tile_n;
  j["k_half"] = c.k_half;
  j["halving_efficiency"] = c.halving_efficiency;
  return j;
}

constexpr std::array<config::Precision, config::kPrecisionCount> kPrecisions = {
    config::Precision::fp32, config::Precision::tf32, config::Precision::fp16, config::Precision::bf16,
    config::Precision::fp8};

}  // namespace

nlohmann::ordered_json gpu_profile_json(const config::GpuProfile& g, const Sources& sources) {
  nlohmann::ordered_json j;
  j["schema_version"] = 1;
  j["id"] = g.id;
  j["name"] = g.name;
  nlohmann::ordered_json peaks = nlohmann::ordered_json::object();
  for (config::Precision p : kPrecisions) {
    if (const auto& peak = g.peak_tflops[static_cast<std::size_t>(p)]) peaks[config::to_string(p)] = *peak;
  }
  j["peak_tflops"] = peaks;
  j["hbm_bytes"] = g.hbm_bytes;
  j["hbm_bandwidth_gbytes_per_s"] = g.hbm_bandwidth_gbytes_per_s;
  j["memory_efficiency"] = g.memory_efficiency;
  j["sm_count"] = g.sm_count;
  nlohmann::ordered_json gemm = gemm_curve_json(g.gemm);
  nlohmann::ordered_json by = nlohmann::ordered_json::object();
  for (config::Precision p : kPrecisions) {
    if (const auto& curve = g.gemm_by_precision[static_cast<std::size_t>(p)])
      by[config::to_string(p)] = gemm_curve_json(*curve);
  }
  if (!by.empty()) gemm["by_precision"] = by;
  if (!g.gemm_measured.empty()) {
    nlohmann::ordered_json rows = nlohmann::ordered_json::array();
    for (const auto& m : g.gemm_measured) {
      rows.push_back({{"m", m.m},
                      {"n", m.n},
                      {"k", m.k},
                      {"precision", config::to_string(m.precision)},
                      {"tflops", m.tflops}});
    }
    gemm["measured"] = rows;
  }
  j["gemm"] = gemm;
  j["attention_efficiency"] = g.attention_efficiency;
  if (g.attention_half_waves > 0.0) j["attention_half_waves"] = g.attention_half_waves;
  if (g.attention_half_keys > 0.0) j["attention_half_keys"] = g.attention_half_keys;
  if (!g.attention_measured.empty()) {
    nlohmann::ordered_json rows = nlohmann::ordered_json::array();
    for (const auto& a : g.attention_measured)
      rows.push_back({{"batch_heads", a.batch_heads}, {"seq", a.seq}, {"efficiency", a.efficiency}});
    j["attention_measured"] = rows;
  }
  j["kernel_launch_us"] = g.kernel_launch_us;
  j["overlap_slowdown"] = g.overlap_slowdown;
  if (g.spread) {
    j["spread"] = {{"compute_p10", g.spread->compute_p10},
                   {"compute_p90", g.spread->compute_p90},
                   {"memory_p10", g.spread->memory_p10},
                   {"memory_p90", g.spread->memory_p90}};
  }
  j["sources"] = sources_json(sources);
  return j;
}

}  // namespace dtsim::reports
