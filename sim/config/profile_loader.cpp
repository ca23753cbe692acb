#include "config/profile_loader.hpp"

#include <algorithm>
#include <array>
#include <filesystem>
#include <limits>
#include <system_error>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "config/profile_files.hpp"
#include "core/units.hpp"

namespace dtsim::config {

using detail::check_sources;
using detail::open_profile;
using detail::ProfileFile;
using detail::read_header;
using detail::resolve;
using nlohmann::json;

namespace {

constexpr std::array<Choice<ModelKind>, 1> kModelKinds = {{{"transformer", ModelKind::transformer}}};

}  // namespace

std::vector<std::string> list_ids(const std::string& folder) {
  std::vector<std::string> ids;
  std::error_code ec;
  std::filesystem::directory_iterator it(folder, ec);
  if (ec) return ids;
  for (const auto& entry : it) {
    const std::filesystem::path& p = entry.path();
    std::error_code type_ec;
    if (p.extension() == ".json" && entry.is_regular_file(type_ec)) ids.push_back(p.stem().string());
  }
  std::sort(ids.begin(), ids.end());
  return ids;
}

namespace {

// A GEMM curve; every key is required unless a base curve supplies it.
GemmCurve read_gemm_curve(ObjectReader& r, const std::optional<GemmCurve>& base) {
  const auto number = [&](const char* key, double fallback, const NumberRule& rule) {
    return base ? r.optional<double>(key, fallback, rule) : r.required<double>(key, rule);
  };
  const auto integer = [&](const char* key, int fallback) {
    return base ? r.optional<int>(key, fallback, IntRule::positive())
                : r.required<int>(key, IntRule::positive());
  };
  const GemmCurve b = base.value_or(GemmCurve{});
  GemmCurve c;
  c.max_efficiency = number("max_efficiency", b.max_efficiency, NumberRule::fraction());
  c.tile_m = integer("tile_m", b.tile_m);
  c.tile_n = integer("tile_n", b.tile_n);
  c.k_half = number("k_half", b.k_half, NumberRule::non_negative());
  c.halving_efficiency = number("halving_efficiency", b.halving_efficiency, NumberRule::fraction());
  return c;
}

// Calls read_row on each object of the optional array `key` of r (a list of measurements); the row
// reader is finished after it, so unknown keys in a row are errors.
template <typename ReadRow>
void read_measurements(ObjectReader& r, std::string_view key, const std::string& path, ReadRow&& read_row) {
  const json* rows = r.find(key);
  if (rows == nullptr) return;
  const std::string pointer = pointer_append(r.pointer(), key);
  if (!rows->is_array())
    throw core::InputError(path, pointer,
                           fmt::format("got {}; expected an array of measurements", describe_value(*rows)));
  for (std::size_t i = 0; i < rows->size(); ++i) {
    ObjectReader row((*rows)[i], path, pointer_append(pointer, i));
    read_row(row);
    row.finish();
  }
}

}  // namespace

GpuProfile load_gpu_profile(const std::string& hardware_profiles, const std::string& id,
                            const IdLocation& where) {
  const ProfileFile file = open_profile(hardware_profiles, "gpus", id, "GPU profiles", where);
  const std::string& path = file.path;
  ObjectReader r(file.doc, path, "");
  r.expect_keys({"schema_version", "id", "name", "sources", "peak_tflops", "hbm_bytes",
                 "hbm_bandwidth_gbytes_per_s", "memory_efficiency", "memory_classes", "sm_count", "gemm",
                 "attention_efficiency", "attention_half_waves", "attention_half_keys", "attention_measured",
                 "kernel_launch_us", "overlap_slowdown", "spread", "host_link_gbytes_per_s",
                 "host_gather_efficiency"});
  GpuProfile gpu;
  gpu.id = id;
  gpu.name = read_header(r, id);

  ObjectReader peaks = r.child("peak_tflops");
  peaks.expect_keys({"fp32", "tf32", "fp16", "bf16", "fp8"});
  constexpr std::array<Precision, kPrecisionCount> kAll = {Precision::fp32, Precision::tf32, Precision::fp16,
                                                           Precision::bf16, Precision::fp8};
  bool any_peak = false;
  for (Precision p : kAll) {
    auto& slot = gpu.peak_tflops[static_cast<std::size_t>(p)];
    slot = peaks.maybe<double>(to_string(p), NumberRule::positive());
    any_peak = any_peak || slot.has_value();
  }
  if (!any_peak) {
    throw peaks.error_here(
        fmt::format("got {}; expected a peak for at least one of fp32, tf32, fp16, bf16, fp8",
                    describe_value(peaks.value())));
  }
  peaks.finish();

  gpu.hbm_bytes = r.required<double>("hbm_bytes", NumberRule::positive());
  gpu.hbm_bandwidth_gbytes_per_s = r.required<double>("hbm_bandwidth_gbytes_per_s", NumberRule::positive());
  gpu.memory_efficiency = r.required<double>("memory_efficiency", NumberRule::fraction());
  if (auto classes = r.optional_child("memory_classes")) {
    // Streaming kernels run at memory_efficiency: the other classes are stated here.
    classes->expect_keys(std::span(core::kMemoryClassNames).subspan(1));
    for (std::size_t i = 1; i < core::kMemoryClassCount; ++i) {
      gpu.memory_class_efficiency[i] = classes->maybe<double>(std::string(core::kMemoryClassNames[i]),
                                                              NumberRule::fraction());
    }
    classes->finish();
  }
  gpu.sm_count = r.required<int>("sm_count", IntRule::positive());

  ObjectReader gemm = r.child("gemm");
  gemm.expect_keys(
      {"max_efficiency", "tile_m", "tile_n", "k_half", "halving_efficiency", "by_precision", "measured",
       "unaligned_odd", "unaligned_even"});
  gpu.gemm = read_gemm_curve(gemm, std::nullopt);
  gpu.gemm_unaligned_odd = gemm.optional<double>("unaligned_odd", 1.0, NumberRule::fraction());
  gpu.gemm_unaligned_even = gemm.optional<double>("unaligned_even", 1.0, NumberRule::fraction());
  if (auto by = gemm.optional_child("by_precision")) {
    by->expect_keys({"fp32", "tf32", "fp16", "bf16", "fp8"});
    for (Precision p : kAll) {
      if (auto curve = by->optional_child(to_string(p))) {
        curve->expect_keys({"max_efficiency", "tile_m", "tile_n", "k_half", "halving_efficiency"});
        gpu.gemm_by_precision[static_cast<std::size_t>(p)] = read_gemm_curve(*curve, gpu.gemm);
        curve->finish();
      }
    }
    by->finish();
  }
  read_measurements(gemm, "measured", path, [&](ObjectReader& row) {
    row.expect_keys({"m", "n", "k", "precision", "tflops"});
    GemmMeasurement g;
    g.m = row.required<std::int64_t>("m", IntRule::positive());
    g.n = row.required<std::int64_t>("n", IntRule::positive());
    g.k = row.required<std::int64_t>("k", IntRule::positive());
    g.precision = row.enum_value<Precision>("precision", named_choices(kAll));
    g.tflops = row.required<double>("tflops", NumberRule::positive());
    gpu.gemm_measured.push_back(g);
  });
  gemm.finish();

  gpu.attention_efficiency = r.required<double>("attention_efficiency", NumberRule::fraction());
  gpu.attention_half_waves = r.optional<double>("attention_half_waves", 0.0, NumberRule::non_negative());
  gpu.attention_half_keys = r.optional<double>("attention_half_keys", 0.0, NumberRule::non_negative());
  read_measurements(r, "attention_measured", path, [&](ObjectReader& row) {
    row.expect_keys({"batch_heads", "seq", "efficiency"});
    AttentionMeasurement a;
    a.batch_heads = row.required<std::int64_t>("batch_heads", IntRule::positive());
    a.seq = row.required<std::int64_t>("seq", IntRule::positive());
    a.efficiency = row.required<double>("efficiency", NumberRule::fraction());
    gpu.attention_measured.push_back(a);
  });
  gpu.kernel_launch_us = r.required<double>("kernel_launch_us", NumberRule::positive());
  gpu.overlap_slowdown = r.required<double>("overlap_slowdown", NumberRule{1.0, false, 10.0, false});
  gpu.host_link_gbytes_per_s = r.optional<double>("host_link_gbytes_per_s", 0.0, NumberRule::positive());
  gpu.host_gather_efficiency = r.optional<double>("host_gather_efficiency", 0.0, NumberRule::fraction());
  if (auto spread = r.optional_child("spread")) {
    spread->expect_keys({"compute_p10", "compute_p90", "memory_p10", "memory_p90"});
    ThroughputSpread t;
    t.compute_p10 = spread->required<double>("compute_p10", NumberRule::fraction());
    t.compute_p90 = spread->required<double>("compute_p90", NumberRule::at_least(1.0));
    t.memory_p10 = spread->required<double>("memory_p10", NumberRule::fraction());
    t.memory_p90 = spread->required<double>("memory_p90", NumberRule::at_least(1.0));
    spread->finish();
    gpu.spread = t;
  }
  check_sources(r);
  r.finish();
  return gpu;
}

NodeProfile load_node_profile(const std::string& hardware_profiles, const std::string& id,
                              const IdLocation& where) {
  const ProfileFile file = open_profile(hardware_profiles, "nodes", id, "node profiles", where);
  const std::string& path = file.path;
  ObjectReader r(file.doc, path, "");
  r.expect_keys({"schema_version", "id", "name", "sources", "gpu", "gpus_per_node", "intra_node", "network",
                 "host_memory_bytes", "host_cpu_cores", "price"});
  NodeProfile node;
  node.id = id;
  node.name = read_header(r, id);
  node.gpu = r.required<std::string>("gpu");
  node.gpus_per_node = r.required<int>("gpus_per_node", IntRule::positive());

  ObjectReader intra = r.child("intra_node");
  intra.expect_keys({"kind", "gbytes_per_s", "efficiency", "latency_us", "nvls_busbw_gbytes_per_s",
                     "bandwidth_p10", "bandwidth_p90"});
  node.intra_kind = intra.enum_value<IntraNodeKind>(
      "kind", named_choices(std::array{IntraNodeKind::nvswitch, IntraNodeKind::nvlink, IntraNodeKind::pcie,
                                       IntraNodeKind::shared_memory}));
  node.intra_gbytes_per_s = intra.required<double>("gbytes_per_s", NumberRule::positive());
  node.intra_efficiency = intra.required<double>("efficiency", NumberRule::fraction());
  node.intra_latency_us = intra.required<double>("latency_us", NumberRule::positive());
  node.nvls_busbw_gbytes_per_s = intra.maybe<double>("nvls_busbw_gbytes_per_s", NumberRule::positive());
  node.intra_bandwidth_p10 = intra.maybe<double>("bandwidth_p10", NumberRule::fraction());
  node.intra_bandwidth_p90 = intra.maybe<double>("bandwidth_p90", NumberRule::at_least(1.0));
  intra.finish();

  ObjectReader network = r.child("network");
  network.expect_keys({"fabric", "nic_gbps", "nics_per_node"});
  node.fabric = network.required<std::string>("fabric");
  node.nic_gbps = network.required<double>("nic_gbps", NumberRule::positive());
  node.nics_per_node = network.required<int>(
      "nics_per_node", IntRule::between(1, std::int64_t{kMaxNicsPerGpu} * node.gpus_per_node));
  network.finish();

  node.host_memory_bytes = r.required<double>("host_memory_bytes", NumberRule::positive());
  node.host_cpu_cores = r.maybe<std::int64_t>("host_cpu_cores", IntRule::positive());
  if (std::optional<ObjectReader> price = r.optional_child("price")) {
    price->expect_keys({"usd_per_node_hour"});
    node.usd_per_node_hour = price->required<double>("usd_per_node_hour", NumberRule::positive());
    price->finish();
  }
  check_sources(r);
  if (node.usd_per_node_hour) node.price_source = r.value()["sources"]["price"].get<std::string>();
  r.finish();
  return node;
}

FabricProfile load_fabric_profile(const std::string& hardware_profiles, const std::string& id,
                                  const IdLocation& where) {
  const ProfileFile file = open_profile(hardware_profiles, "fabrics", id, "fabric profiles", where);
  const std::string& path = file.path;
  ObjectReader r(file.doc, path, "");
  r.expect_keys({"schema_version", "id", "name", "sources", "efficiency", "latency_us",
                 "per_message_overhead_us", "per_flow_gbps", "fitted_on"});
  FabricProfile fabric;
  fabric.id = id;
  fabric.name = read_header(r, id);
  fabric.efficiency = r.required<double>("efficiency", NumberRule::fraction());
  fabric.latency_us = r.required<double>("latency_us", NumberRule::positive());
  fabric.per_message_overhead_us = r.required<double>("per_message_overhead_us", NumberRule::non_negative());
  fabric.per_flow_gbps = r.maybe<double>("per_flow_gbps", NumberRule::positive());
  if (auto fitted = r.optional_child("fitted_on")) {
    fitted->expect_keys({"min_nodes", "max_nodes", "min_bytes", "max_bytes"});
    FittedRange range;
    range.min_nodes = fitted->required<std::int64_t>("min_nodes", IntRule::positive());
    range.max_nodes = fitted->required<std::int64_t>("max_nodes", IntRule::at_least(range.min_nodes));
    range.min_bytes = fitted->required<double>("min_bytes", NumberRule::positive());
    range.max_bytes = fitted->required<double>("max_bytes", NumberRule::at_least(range.min_bytes));
    fitted->finish();
    fabric.fitted_on = range;
  }
  check_sources(r);
  r.finish();
  return fabric;
}

PsTransport load_ps_transport(const std::string& hardware_profiles, const std::string& id,
                              const IdLocation& where) {
  const ProfileFile file =
      open_profile(hardware_profiles, "ps_transports", id, "parameter-server transports", where);
  const std::string& path = file.path;
  ObjectReader r(file.doc, path, "");
  r.expect_keys({"schema_version", "id", "name", "sources", "channel_gbytes_per_s", "server_gbytes_per_s",
                 "large_message"});
  PsTransport t;
  t.id = id;
  read_header(r, id);
  t.channel_gbytes_per_s = r.maybe<double>("channel_gbytes_per_s", NumberRule::positive());
  t.server_gbytes_per_s = r.maybe<double>("server_gbytes_per_s", NumberRule::positive());
  if (auto large = r.optional_child("large_message")) {
    large->expect_keys({"mb", "gbytes_per_s"});
    const double bytes = large->required<double>("mb", NumberRule::positive()) * core::kBytesPerMb;
    const double rate = large->required<double>("gbytes_per_s", NumberRule::positive()) * core::kGiga;
    if (!t.server_gbytes_per_s || rate >= *t.server_gbytes_per_s * core::kGiga) {
      throw large->error_at("gbytes_per_s",
                            "expected a rate below server_gbytes_per_s (the large-message "
                            "time is what the measured rate leaves beyond the server's)");
    }
    t.receive_s_per_square_byte =
        (bytes / rate - bytes / (*t.server_gbytes_per_s * core::kGiga)) / (bytes * bytes);
    large->finish();
  }
  check_sources(r);
  r.finish();
  return t;
}

TransformerSpec load_model_preset(const std::string& model_presets, const std::string& id,
                                  const IdLocation& where) {
  const std::string path = resolve(model_presets, id, "model presets", where);
  const json doc = read_json_file(path);
  ObjectReader r(doc, path, "");
  r.expect_keys({"schema_version", "id", "name", "source", "model"});
  read_header(r, id);
  r.required<std::string>("source");
  ObjectReader model = r.child("model");
  TransformerSpec spec = read_transformer(model, std::nullopt);
  r.finish();
  spec.preset = id;
  return spec;
}

namespace {

// model.moe (config::MoeSpec); a scenario's block over a preset's keeps the preset's values it does not
// set.
MoeSpec read_moe(ObjectReader& r, const std::optional<MoeSpec>& base) {
  r.expect_keys({"experts", "top_k", "expert_ffn_hidden_size", "shared_ffn_hidden_size", "load_imbalance",
                 "capacity_factor", "max_nodes_per_token", "first_dense_layers", "routing"});
  MoeSpec m = base.value_or(MoeSpec{});
  const IntRule experts = IntRule::between(1, kMaxExperts);
  m.experts = base ? r.optional<std::int64_t>("experts", m.experts, experts)
                   : r.required<std::int64_t>("experts", experts);
  m.top_k = r.optional<std::int64_t>("top_k", m.top_k, IntRule::between(1, m.experts));
  m.expert_ffn_hidden_size =
      base ? r.optional<std::int64_t>("expert_ffn_hidden_size", m.expert_ffn_hidden_size, IntRule::positive())
           : r.required<std::int64_t>("expert_ffn_hidden_size", IntRule::positive());
  m.shared_ffn_hidden_size =
      r.optional<std::int64_t>("shared_ffn_hidden_size", m.shared_ffn_hidden_size, IntRule::non_negative());
  // The busiest expert takes at most every token once: experts / top_k times the mean.
  const double most = static_cast<double>(m.experts) / static_cast<double>(m.top_k);
  m.load_imbalance = r.optional<double>("load_imbalance", m.load_imbalance, NumberRule::between(1.0, most));
  if (r.has("capacity_factor")) {
    m.capacity_factor = r.required<double>("capacity_factor", NumberRule{0.0, true, most, false});
  }
  if (r.has("max_nodes_per_token"))
    m.max_nodes_per_token = r.required<std::int64_t>("max_nodes_per_token", IntRule::positive());
  m.first_dense_layers =
      r.optional<std::int64_t>("first_dense_layers", m.first_dense_layers, IntRule::non_negative());
  m.routing = r.optional_enum<MoeRouting>("routing", m.routing, named_choices(kMoeRoutings));
  if (m.top_k > m.experts) throw r.mismatch("top_k", fmt::format("at most experts ({})", m.experts));
  r.finish();
  return m;
}

// model.mla (config::MlaSpec); a scenario's block over a preset's keeps the preset's values it does not
// state.
MlaSpec read_mla(ObjectReader& r, const std::optional<MlaSpec>& base) {
  r.expect_keys({"q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"});
  const IntRule dim = IntRule::between(1, kMaxHeadDim);
  MlaSpec m;
  if (base) {
    m = *base;
    m.q_lora_rank = r.optional<std::int64_t>("q_lora_rank", m.q_lora_rank, IntRule::between(0, kMaxHeadDim));
    m.kv_lora_rank = r.optional<std::int64_t>("kv_lora_rank", m.kv_lora_rank, dim);
    m.qk_nope_head_dim = r.optional<std::int64_t>("qk_nope_head_dim", m.qk_nope_head_dim, dim);
    m.qk_rope_head_dim = r.optional<std::int64_t>("qk_rope_head_dim", m.qk_rope_head_dim, dim);
    m.v_head_dim = r.optional<std::int64_t>("v_head_dim", m.v_head_dim, dim);
  } else {
    m.q_lora_rank = r.optional<std::int64_t>("q_lora_rank", 0, IntRule::between(0, kMaxHeadDim));
    m.kv_lora_rank = r.required<std::int64_t>("kv_lora_rank", dim);
    m.qk_nope_head_dim = r.required<std::int64_t>("qk_nope_head_dim", dim);
    m.qk_rope_head_dim = r.required<std::int64_t>("qk_rope_head_dim", dim);
    m.v_head_dim = r.required<std::int64_t>("v_head_dim", dim);
  }
  r.finish();
  return m;
}

// model.sliding_window (config::SlidingWindowSpec); over a preset's block, keeps the values it does not
// state.
SlidingWindowSpec read_sliding_window(ObjectReader& r, const std::optional<SlidingWindowSpec>& base) {
  r.expect_keys({"window", "full_attention_every"});
  SlidingWindowSpec w = base.value_or(SlidingWindowSpec{});
  w.window = base ? r.optional<std::int64_t>("window", w.window, IntRule::positive())
                  : r.required<std::int64_t>("window", IntRule::positive());
  w.full_attention_every =
      r.optional<std::int64_t>("full_attention_every", w.full_attention_every, IntRule::non_negative());
  r.finish();
  return w;
}

}  // namespace

TransformerSpec read_transformer(ObjectReader& model, const std::optional<TransformerSpec>& base) {
  model.expect_keys({"kind", "layers", "hidden_size", "heads", "kv_heads", "head_dim", "ffn_hidden_size",
                     "vocab_size", "seq_length", "mlp", "attention", "elementwise_kernels", "tied_embeddings",
                     "vocab_padding", "moe", "mla", "mtp_layers", "sliding_window"});
  const IntRule positive = IntRule::positive();
  TransformerSpec spec;
  if (base) {
    spec = *base;
    model.optional_enum<ModelKind>("kind", ModelKind::transformer, kModelKinds);
    spec.layers = model.optional<std::int64_t>("layers", base->layers, positive);
    spec.hidden_size = model.optional<std::int64_t>("hidden_size", base->hidden_size, positive);
    spec.heads = model.optional<std::int64_t>("heads", base->heads, positive);
    spec.kv_heads = model.optional<std::int64_t>("kv_heads", base->kv_heads, positive);
    spec.head_dim = model.optional<std::int64_t>("head_dim", base->head_dim, IntRule::between(1, kMaxHeadDim));
    spec.ffn_hidden_size = model.optional<std::int64_t>("ffn_hidden_size", base->ffn_hidden_size, positive);
    spec.vocab_size = model.optional<std::int64_t>("vocab_size", base->vocab_size, positive);
    spec.seq_length = model.optional<std::int64_t>("seq_length", base->seq_length, positive);
  } else {
    model.enum_value<ModelKind>("kind", kModelKinds);
    spec.layers = model.required<std::int64_t>("layers", positive);
    spec.hidden_size = model.required<std::int64_t>("hidden_size", positive);
    spec.heads = model.required<std::int64_t>("heads", positive);
    spec.kv_heads = model.optional<std::int64_t>("kv_heads", spec.heads, positive);
    spec.head_dim = model.optional<std::int64_t>("head_dim", 0, IntRule::between(1, kMaxHeadDim));
    // 4 * hidden_size cannot overflow: hidden_size is read as a positive int64 and checked below.
    if (spec.hidden_size > std::numeric_limits<std::int64_t>::max() / 4) {
      throw model.mismatch("hidden_size",
                           fmt::format("an integer <= {}", std::numeric_limits<std::int64_t>::max() / 4));
    }
    spec.ffn_hidden_size = model.optional<std::int64_t>("ffn_hidden_size", 4 * spec.hidden_size, positive);
    spec.vocab_size = model.required<std::int64_t>("vocab_size", positive);
    spec.seq_length = model.required<std::int64_t>("seq_length", positive);
  }
  spec.mlp = model.optional_enum<MlpKind>("mlp", spec.mlp,
                                          named_choices(std::array{MlpKind::gelu, MlpKind::swiglu}));
  spec.attention =
      model.optional_enum<AttentionKind>("attention", spec.attention, named_choices(kAttentionKinds));
  spec.elementwise_kernels = model.optional_enum<ElementwiseKernels>(
      "elementwise_kernels", spec.elementwise_kernels, named_choices(kElementwiseKernels));
  spec.tied_embeddings = model.optional<bool>("tied_embeddings", spec.tied_embeddings);
  spec.vocab_padding = model.optional<std::int64_t>("vocab_padding", spec.vocab_padding,
                                                    IntRule::between(1, kMaxVocabPadding));
  spec.mtp_layers =
      model.optional<std::int64_t>("mtp_layers", spec.mtp_layers, IntRule::between(0, kMaxMtpLayers));
  if (std::optional<ObjectReader> moe = model.optional_child("moe")) spec.moe = read_moe(*moe, spec.moe);
  if (std::optional<ObjectReader> mla = model.optional_child("mla")) spec.mla = read_mla(*mla, spec.mla);
  if (const json* window = model.find("sliding_window"); window != nullptr && window->is_null()) {
    spec.sliding_window.reset();  // null: full attention in every layer, over a preset's window too
  } else if (std::optional<ObjectReader> block = model.optional_child("sliding_window")) {
    spec.sliding_window = read_sliding_window(*block, spec.sliding_window);
  }
  if (spec.moe && spec.moe->first_dense_layers >= spec.layers) {
    // Report where the user wrote the offending number: the moe block's key if given here, else layers.
    const std::string expected =
        fmt::format("fewer than layers ({}): at least one mixture-of-experts layer", spec.layers);
    if (std::optional<ObjectReader> moe = model.optional_child("moe"); moe && moe->has("first_dense_layers"))
      throw moe->mismatch("first_dense_layers", expected);
    throw model.mismatch("layers",
                         fmt::format("more than moe.first_dense_layers ({})", spec.moe->first_dense_layers));
  }
  if (spec.mla) {
    // Latent attention up-projects keys and values for every query head, at its own head widths.
    if (spec.kv_heads != spec.heads) {
      if (model.has("kv_heads") || !model.has("heads"))
        throw model.mismatch("kv_heads", fmt::format("equal to heads ({}) with mla", spec.heads));
      throw model.mismatch("heads", fmt::format("equal to kv_heads ({}) with mla", spec.kv_heads));
    }
    if (spec.head_dim != 0)
      throw model.mismatch(
          "head_dim",
          "absent with mla (its head widths are qk_nope_head_dim + qk_rope_head_dim and v_head_dim)");
    if (spec.elementwise_kernels != ElementwiseKernels::fused)
      throw model.mismatch("elementwise_kernels",
                           "\"fused\" with mla (eager latent attention is not modelled)");
  }

  if (spec.heads % spec.kv_heads != 0) {
    // Report where the user wrote the offending number: kv_heads if given here, else heads.
    if (model.has("kv_heads") || !model.has("heads")) {
      throw model.mismatch("kv_heads", fmt::format("a divisor of heads ({})", spec.heads));
    }
    throw model.mismatch("heads", fmt::format("a multiple of kv_heads ({})", spec.kv_heads));
  }
  if (spec.head_dim == 0 && !spec.mla && spec.hidden_size % spec.heads != 0) {
    if (model.has("heads") || !model.has("hidden_size")) {
      throw model.mismatch("heads",
                           fmt::format("a divisor of hidden_size ({}), or a head_dim", spec.hidden_size));
    }
    throw model.mismatch("hidden_size", fmt::format("a multiple of heads ({}), or a head_dim", spec.heads));
  }
  model.finish();
  return spec;
}

}  // namespace dtsim::config
