#include "config/dlrm_loader.hpp"

#include <optional>
#include <set>
#include <span>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "config/json_excerpt.hpp"
#include "config/json_text.hpp"
#include "config/profile_files.hpp"
#include "core/errors.hpp"
#include "core/units.hpp"

namespace dtsim::config {

using nlohmann::json;

// Named, not anonymous: unity builds put several files in one translation unit.
namespace dlrm_reading {

constexpr std::int64_t kMaxLayerWidth = std::int64_t{1} << 24;
constexpr std::int64_t kMaxLayers = 64;
constexpr std::int64_t kMaxRows = std::int64_t{1} << 40;
constexpr std::int64_t kMaxDim = 1 << 16;
constexpr std::int64_t kMaxServers = std::int64_t{1} << 20;

// An array of 1 to kMaxLayers layer widths, each positive.
std::vector<std::int64_t> read_widths(ObjectReader& r, std::string_view key) {
  const json* found = r.find(key);
  const std::string at = pointer_append(r.pointer(), key);
  const auto bad = [&](const std::string& got) {
    return core::InputError(
        r.file(), at,
        fmt::format("got {}; expected an array of 1 to {} layer widths, each from 1 to {}", got, kMaxLayers,
                    kMaxLayerWidth));
  };
  if (!found->is_array() || found->empty() || found->size() > static_cast<std::size_t>(kMaxLayers)) {
    throw bad(found->is_array() ? fmt::format("{} entries", found->size()) : json_type_name(*found));
  }
  std::vector<std::int64_t> out;
  for (const json& v : *found) {
    if (!v.is_number_integer() || v.get<std::int64_t>() < 1 || v.get<std::int64_t>() > kMaxLayerWidth) {
      throw bad(describe_value(v));
    }
    out.push_back(v.get<std::int64_t>());
  }
  return out;
}

// `key`: {"table name": choice} overrides, each naming a table of the model.
template <typename T>
std::vector<std::pair<std::string, T>> read_per_table(ObjectReader& r, std::string_view key, const DlrmSpec& model,
                                                      std::span<const Choice<T>> choices) {
  std::vector<std::pair<std::string, T>> out;
  std::optional<ObjectReader> per = r.optional_child(key);
  if (!per) return out;
  std::set<std::string> names;
  for (const EmbeddingTable& t : model.tables) names.insert(t.name);
  for (const auto& [name, value] : per->value().items()) {
    if (names.count(name) == 0) {
      throw per->error_at(name, fmt::format("no table is named \"{}\"; expected the name of one of the model's {} "
                                            "tables",
                                            name, model.tables.size()));
    }
    out.emplace_back(name, per->enum_value<T>(name, choices));
  }
  per->finish();
  return out;
}

RemoteServers read_remote_servers(ObjectReader& r) {
  r.expect_keys({"count", "memory_gbytes", "nic_gbps", "row_gbytes_per_s", "usd_per_hour"});
  RemoteServers out;
  out.count = r.required<std::int64_t>("count", IntRule::between(1, kMaxServers));
  out.memory_bytes = r.required<double>("memory_gbytes", NumberRule::positive()) * core::kGiga;
  out.nic_gbps = r.required<double>("nic_gbps", NumberRule::positive());
  out.row_gbytes_per_s = r.required<double>("row_gbytes_per_s", NumberRule::positive());
  out.usd_per_hour = r.maybe<double>("usd_per_hour", NumberRule::non_negative());
  r.finish();
  return out;
}

std::vector<EmbeddingTable> read_tables(ObjectReader& r) {
  const json* found = r.find("tables");
  const std::string at = pointer_append(r.pointer(), "tables");
  if (!found->is_array() || found->empty()) {
    throw core::InputError(
        r.file(), at,
        fmt::format("got {}; expected a non-empty array of tables, each {{\"name\", \"rows\", "
                    "\"dim\", \"pooling\"}}",
                    found->is_array() ? "an empty array" : json_type_name(*found)));
  }
  std::vector<EmbeddingTable> out;
  std::set<std::string> names;
  for (std::size_t i = 0; i < found->size(); ++i) {
    ObjectReader t((*found)[i], r.file(), pointer_append(at, i));
    t.expect_keys({"name", "rows", "dim", "pooling", "zipf_exponent", "count"});
    EmbeddingTable table;
    table.name = t.required<std::string>("name");
    table.rows = t.required<std::int64_t>("rows", IntRule::between(1, kMaxRows));
    table.dim = t.required<std::int64_t>("dim", IntRule::between(1, kMaxDim));
    table.pooling = t.optional<double>("pooling", 1.0, NumberRule::between(0.0, 1e6));
    table.zipf_exponent = t.optional<double>("zipf_exponent", 0.0, NumberRule::between(0.0, 10.0));
    const std::int64_t count = t.optional<std::int64_t>("count", 1, IntRule::between(1, kMaxEmbeddingTables));
    if (static_cast<std::int64_t>(out.size()) + count > kMaxEmbeddingTables) {
      throw t.error_at("count",
                       fmt::format("got {}; a model has at most {} tables", count, kMaxEmbeddingTables));
    }
    t.finish();
    for (std::int64_t k = 0; k < count; ++k) {
      EmbeddingTable copy = table;
      if (count > 1) copy.name = fmt::format("{}_{}", table.name, k);
      if (!names.insert(copy.name).second) {
        throw t.error_at("name", fmt::format("got \"{}\"; another table has that name", copy.name));
      }
      out.push_back(std::move(copy));
    }
  }
  return out;
}

// The keys of a DLRM model, over `base` (a preset) when given.
DlrmSpec read_dlrm_keys(ObjectReader& m, const std::optional<DlrmSpec>& base) {
  m.expect_keys({"kind", "preset", "dense_features", "bottom_mlp", "top_mlp", "interaction", "dcn_layers",
                 "dcn_low_rank", "embedding_precision", "tables"});
  DlrmSpec spec = base.value_or(DlrmSpec{});
  if (m.optional<std::string>("kind", "dlrm") != "dlrm") throw m.mismatch("kind", "\"dlrm\"");
  const auto need = [&](std::string_view key) {
    if (!base && !m.has(key)) throw m.mismatch(key, "a value (no \"preset\" gives it)");
  };
  for (const char* key : {"dense_features", "bottom_mlp", "top_mlp", "tables"}) need(key);
  spec.dense_features =
      m.optional<std::int64_t>("dense_features", spec.dense_features, IntRule::between(1, kMaxLayerWidth));
  if (m.has("bottom_mlp")) spec.bottom_mlp = read_widths(m, "bottom_mlp");
  if (m.has("top_mlp")) spec.top_mlp = read_widths(m, "top_mlp");
  spec.interaction =
      m.optional_enum<Interaction>("interaction", spec.interaction, named_choices(kInteractions));
  const bool dcn = spec.interaction == Interaction::dcn_v2;
  spec.dcn_layers = m.optional<std::int64_t>("dcn_layers", spec.dcn_layers > 0 ? spec.dcn_layers : 3,
                                             IntRule::between(1, kMaxLayers));
  spec.dcn_low_rank = m.optional<std::int64_t>(
      "dcn_low_rank", spec.dcn_low_rank > 0 ? spec.dcn_low_rank : 512, IntRule::between(1, kMaxLayerWidth));
  for (const char* key : {"dcn_layers", "dcn_low_rank"}) {
    if (!dcn && m.has(key)) {
      throw m.error_at(
          key, "applies to the DCN-v2 interaction; expected \"interaction\": \"dcn_v2\" or no such key");
    }
  }
  spec.embedding_precision = m.optional_enum<Precision>(
      "embedding_precision", spec.embedding_precision,
      named_choices(std::array{Precision::fp32, Precision::fp16, Precision::bf16}));
  if (m.has("tables")) spec.tables = read_tables(m);
  if (spec.top_mlp.back() != 1) {
    throw m.error_at(
        "top_mlp", fmt::format("got a last width of {}; expected 1 (the click logit)", spec.top_mlp.back()));
  }
  for (std::size_t i = 0; i < spec.tables.size(); ++i) {
    if (spec.tables[i].dim != spec.embedding_dim()) {
      throw core::InputError(
          m.file(), pointer_append(pointer_append(pointer_append(m.pointer(), "tables"), i), "dim"),
          fmt::format("table \"{}\" has dim {}; expected the bottom MLP's output width {}: the interaction "
                      "combines the dense vector with every pooled embedding, all of one width",
                      spec.tables[i].name, spec.tables[i].dim, spec.embedding_dim()));
    }
  }
  return spec;
}

}  // namespace dlrm_reading

DlrmSpec read_dlrm(ObjectReader& model, const std::string& presets) {
  using namespace dlrm_reading;
  std::optional<DlrmSpec> base;
  std::string id;
  if (model.has("preset")) {
    id = model.required<std::string>("preset");
    const std::string path = detail::resolve(
        presets, id, "DLRM presets", IdLocation{model.file(), pointer_append(model.pointer(), "preset")});
    const json doc = read_json_file(path);
    ObjectReader r(doc, path, "");
    r.expect_keys({"schema_version", "id", "name", "source", "model"});
    detail::read_header(r, id);
    r.required<std::string>("source");
    ObjectReader inner = r.child("model");
    base = read_dlrm_keys(inner, std::nullopt);
    inner.finish();
    r.finish();
  }
  DlrmSpec spec = read_dlrm_keys(model, base);
  spec.preset = id;
  model.finish();
  return spec;
}

EmbeddingPlan read_embedding_plan(ObjectReader& parallelism, const DlrmSpec& model) {
  using namespace dlrm_reading;
  EmbeddingPlan plan;
  std::optional<ObjectReader> r = parallelism.optional_child("embeddings");
  if (!r) return plan;
  r->expect_keys({"sharding", "per_table", "placement", "per_table_placement", "cache_fraction",
                  "column_shard_dim", "pipelined", "servers"});
  const auto shardings = named_choices(kEmbeddingShardings);
  const auto placements = named_choices(kEmbeddingPlacements);
  plan.sharding = r->optional_enum<EmbeddingSharding>("sharding", plan.sharding, shardings);
  plan.per_table = read_per_table<EmbeddingSharding>(*r, "per_table", model, std::span(shardings));
  plan.placement = r->optional_enum<EmbeddingPlacement>("placement", plan.placement, placements);
  plan.per_table_placement =
      read_per_table<EmbeddingPlacement>(*r, "per_table_placement", model, std::span(placements));
  plan.cache_fraction = r->optional<double>("cache_fraction", plan.cache_fraction, NumberRule::fraction());
  if (r->has("cache_fraction") && !plan.any_rows(model, EmbeddingPlacement::host_cached)) {
    throw r->error_at("cache_fraction",
                      "applies to the \"host_cached\" placement; expected \"placement\": "
                      "\"host_cached\" (or a table's in per_table_placement) or no such key");
  }
  plan.column_shard_dim =
      r->optional<std::int64_t>("column_shard_dim", plan.column_shard_dim, IntRule::between(1, kMaxDim));
  plan.pipelined = r->optional<bool>("pipelined", plan.pipelined);
  const bool remote = plan.any_rows(model, EmbeddingPlacement::remote);
  if (std::optional<ObjectReader> servers = r->optional_child("servers")) {
    if (!remote) {
      throw r->error_at("servers",
                        "parameter servers hold the tables of the \"remote\" placement, and no table is "
                        "there; expected \"placement\": \"remote\" (or a table's in per_table_placement) "
                        "or no such key");
    }
    plan.servers = read_remote_servers(*servers);
  } else if (remote) {
    throw r->error_here(
        "the \"remote\" placement keeps the tables on CPU parameter servers: give \"servers\": {\"count\", "
        "\"memory_gbytes\", \"nic_gbps\", \"row_gbytes_per_s\"}");
  }
  r->finish();
  return plan;
}

void check_dlrm_scenario(const std::string& file, const Scenario& s) {
  using namespace dlrm_reading;
  const ParallelismSpec& p = s.parallelism;
  if (p.tensor != 1 || p.pipeline != 1 || p.context != 1 || p.zero_stage != 0) {
    throw core::InputError(
        file, "/parallelism",
        fmt::format("a DLRM trains its dense layers data-parallel and shards its embedding "
                    "tables (parallelism.embeddings); expected tensor, pipeline and context 1 "
                    "and zero_stage 0, got {}, {}, {} and {}",
                    p.tensor, p.pipeline, p.context, p.zero_stage));
  }
  const bool host_tier = p.embeddings.any_rows(*s.dlrm, EmbeddingPlacement::host) ||
                         p.embeddings.any_rows(*s.dlrm, EmbeddingPlacement::host_cached);
  if (host_tier && !s.gpu.has_host_link()) {
    throw core::InputError(
        file, "/parallelism/embeddings/placement",
        fmt::format("got \"{}\"; the GPU profile {} states no host link (host_link_gbytes_per_s "
                    "and host_gather_efficiency) to read host memory over; expected \"hbm\" or \"remote\"",
                    to_string(p.embeddings.placement), s.gpu.id));
  }
  if (!s.cluster.mixed_gpus.empty() || !s.cluster.speed_factors.empty()) {
    throw core::InputError(
        file, "/cluster",
        "speed factors and mixed GPUs apply to transformer and MLP models; a DLRM runs every "
        "GPU at its profile's speed");
  }
  if (s.training.precision == Precision::fp8) {
    throw core::InputError(file, "/training/precision",
                           "got \"fp8\"; a DLRM's dense layers run in fp32, tf32, bf16 or fp16");
  }
  if (s.training.measured_single_gpu) {
    throw core::InputError(
        file, "/training/measured_single_gpu",
        "a measured one-GPU rate calibrates transformer and MLP models; a DLRM is costed from "
        "its profile: leave it out");
  }
}

}  // namespace dtsim::config
