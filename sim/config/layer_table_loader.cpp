#include "config/layer_table_loader.hpp"

#include <algorithm>
#include <array>
#include <filesystem>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace dtsim::config {

using nlohmann::json;

namespace {

constexpr double kBytesPerMiB = 1024.0 * 1024.0;

std::string table_path(const std::string& folder, const std::string& id, const IdLocation& where) {
  const std::vector<std::string> ids = list_ids(folder);
  if (std::find(ids.begin(), ids.end(), id) == ids.end()) {
    std::string known;
    for (const auto& i : ids) known += (known.empty() ? "" : ", ") + i;
    throw core::InputError(
        where.file, where.pointer,
        fmt::format("got {}; expected one of the layer tables: {}", describe_value(json(id)),
                    known.empty() ? "(none found in " + folder + ")" : known));
  }
  return (std::filesystem::path(folder) / (id + ".json")).string();
}

std::vector<double> read_tensors(ObjectReader& layer) {
  const json* found = layer.find("tensors");
  const std::string at = pointer_append(layer.pointer(), "tensors");
  if (found == nullptr) throw layer.mismatch("tensors", "an array of parameter counts");
  if (!found->is_array()) {
    throw core::InputError(
        layer.file(), at,
        fmt::format("got {}; expected an array of parameter counts", describe_value(*found)));
  }
  std::vector<double> out;
  for (std::size_t i = 0; i < found->size(); ++i) {
    const json& v = (*found)[i];
    if (!v.is_number() || v.get<double>() <= 0.0) {
      throw core::InputError(layer.file(), pointer_append(at, i),
                             fmt::format("got {}; expected a positive parameter count", describe_value(v)));
    }
    out.push_back(v.get<double>());
  }
  return out;
}

LayerSpec read_layer(ObjectReader& r) {
  r.expect_keys({"name", "kind", "forward_flops", "gemm", "tensors", "activation_bytes", "input_bytes",
                 "epilogue", "sparse", "lookups_per_sample", "row_params"});
  LayerSpec l;
  l.name = r.required<std::string>("name");
  l.kind = r.enum_value<LayerKind>(
      "kind", std::span<const Choice<LayerKind>>(named_choices(
                  std::array{LayerKind::conv, LayerKind::fc, LayerKind::attention, LayerKind::pool,
                             LayerKind::embedding, LayerKind::norm, LayerKind::add})));
  l.forward_flops = r.required<double>("forward_flops", NumberRule::non_negative());
  const bool needs_gemm =
      l.kind == LayerKind::conv || l.kind == LayerKind::fc || l.kind == LayerKind::attention;
  if (needs_gemm || r.has("gemm")) {
    ObjectReader g = r.child("gemm");
    g.expect_keys({"m", "n", "k", "batch"});
    l.gemm_m = g.required<std::int64_t>("m", IntRule::positive());
    l.gemm_n = g.required<std::int64_t>("n", IntRule::positive());
    l.gemm_k = g.required<std::int64_t>("k", IntRule::positive());
    l.gemm_batch = g.optional<std::int64_t>("batch", 1, IntRule::positive());
    g.finish();
  }
  l.tensors = read_tensors(r);
  l.activation_bytes = r.required<double>("activation_bytes", NumberRule::positive());
  // An addition reads its operands: it needs their bytes.
  l.input_bytes = l.kind == LayerKind::add
                      ? r.required<double>("input_bytes", NumberRule::positive())
                      : r.optional<double>("input_bytes", 0.0, NumberRule::non_negative());
  l.epilogue = r.optional_enum<Epilogue>("epilogue", Epilogue::none,
                                         std::span<const Choice<Epilogue>>(named_choices(std::array{
                                             Epilogue::none, Epilogue::bn, Epilogue::relu, Epilogue::bn_relu,
                                             Epilogue::softmax, Epilogue::gelu, Epilogue::layernorm})));
  l.sparse = r.optional<bool>("sparse", false);
  if (l.sparse) {
    if (l.kind != LayerKind::embedding)
      throw r.error_at("sparse", "got true; only embedding layers can be sparse");
    l.lookups_per_sample = r.required<std::int64_t>("lookups_per_sample", IntRule::positive());
    l.row_params = r.required<std::int64_t>("row_params", IntRule::positive());
  }
  r.finish();
  return l;
}

}  // namespace

LayerTable load_layer_table(const std::string& folder, const std::string& id, const IdLocation& where) {
  const std::string path = table_path(folder, id, where);
  const json doc = read_json_file(path);
  ObjectReader r(doc, path, "");
  r.expect_keys({"schema_version", "id", "name", "source", "sample", "input_size", "convergence", "layers"});
  if (r.required<std::int64_t>("schema_version", IntRule::any()) != 1) {
    throw r.error_at("schema_version", "unsupported schema_version; this dtsim reads 1");
  }
  LayerTable t;
  t.id = r.required<std::string>("id");
  if (t.id != id) throw r.mismatch("id", fmt::format("\"{}\" (the file name)", id));
  t.name = r.required<std::string>("name");
  t.source = r.required<std::string>("source");
  t.sample = r.required<std::string>("sample");
  if (t.sample != "image" && t.sample != "sequence") throw r.mismatch("sample", "\"image\" or \"sequence\"");
  t.input_size = r.required<std::int64_t>("input_size", IntRule::positive());
  ObjectReader c = r.child("convergence");
  c.expect_keys({"b_noise", "s_min", "target", "source"});
  t.convergence.b_noise = c.required<double>("b_noise", NumberRule::positive());
  t.convergence.s_min = c.required<double>("s_min", NumberRule::positive());
  t.convergence.target = c.required<std::string>("target");
  t.convergence.source = c.required<std::string>("source");
  c.finish();
  const json* layers = r.find("layers");
  if (layers == nullptr || !layers->is_array() || layers->empty()) {
    throw core::InputError(path, "/layers", "expected a non-empty array of layers");
  }
  for (std::size_t i = 0; i < layers->size(); ++i) {
    ObjectReader layer((*layers)[i], path, pointer_append("/layers", i));
    t.layers.push_back(read_layer(layer));
  }
  r.finish();
  return t;
}

DataParallelSpec read_data_parallel(ObjectReader& r, const std::string& hardware_profiles) {
  DataParallelSpec d;
  d.architecture = r.optional_enum<Architecture>(
      "architecture", Architecture::allreduce,
      std::span<const Choice<Architecture>>(named_choices(
          std::array{Architecture::allreduce, Architecture::parameter_server, Architecture::hybrid})));
  d.sync = r.optional_enum<SyncMode>("sync", SyncMode::sync,
                                     std::span<const Choice<SyncMode>>(named_choices(
                                         std::array{SyncMode::sync, SyncMode::async, SyncMode::bounded})));
  const std::optional<std::int64_t> bound = r.maybe<std::int64_t>("staleness_bound", IntRule::positive());
  if (d.sync == SyncMode::bounded && !bound) {
    throw r.mismatch("staleness_bound", "a positive integer (required with \"sync\": \"bounded\")");
  }
  if (bound && d.sync != SyncMode::bounded) {
    throw r.error_at("staleness_bound",
                     fmt::format("got {}; staleness_bound needs \"sync\": \"bounded\", but sync "
                                 "is \"{}\"",
                                 *bound, to_string(d.sync)));
  }
  d.staleness_bound = bound.value_or(0);
  if (d.sync != SyncMode::sync && d.architecture != Architecture::parameter_server) {
    throw r.error_at("sync", fmt::format("got \"{}\"; asynchronous and bounded-staleness training need "
                                         "\"architecture\": \"parameter_server\" (all-reduce is a barrier), "
                                         "but architecture is \"{}\"",
                                         to_string(d.sync), to_string(d.architecture)));
  }
  if (auto ps = r.optional_child("parameter_server")) {
    if (d.architecture == Architecture::allreduce) {
      throw r.error_at("parameter_server",
                       "parameter servers need \"architecture\": \"parameter_server\" or "
                       "\"hybrid\", but architecture is \"allreduce\"");
    }
    ps->expect_keys({"servers", "placement", "variable_placement", "apply_gbytes_per_s", "partition_mb",
                     "local_aggregation", "transport"});
    d.parameter_server.servers = ps->optional<std::int64_t>("servers", 1, IntRule::positive());
    d.parameter_server.placement = ps->optional_enum<ServerPlacement>(
        "placement", ServerPlacement::colocated,
        std::span<const Choice<ServerPlacement>>(
            named_choices(std::array{ServerPlacement::colocated, ServerPlacement::dedicated})));
    d.parameter_server.variable_placement = ps->optional_enum<VariablePlacement>(
        "variable_placement", VariablePlacement::round_robin,
        std::span<const Choice<VariablePlacement>>(
            named_choices(std::array{VariablePlacement::round_robin, VariablePlacement::greedy_by_size})));
    d.parameter_server.apply_gbytes_per_s = ps->optional<double>(
        "apply_gbytes_per_s", d.parameter_server.apply_gbytes_per_s, NumberRule::positive());
    // Parts of at least 1 KiB: smaller ones would cut a variable into more parts than it has values
    // worth sending apart (and 1e-300 MiB into more than a loop can count).
    if (const auto mb = ps->maybe<double>("partition_mb", NumberRule::at_least(1.0 / 1024.0))) {
      d.parameter_server.partition_bytes = *mb * kBytesPerMiB;
    }
    d.parameter_server.local_aggregation = ps->optional<bool>("local_aggregation", false);
    if (ps->has("transport")) {
      const std::string id = ps->required<std::string>("transport");
      d.parameter_server.transport = load_ps_transport(
          hardware_profiles, id, IdLocation{ps->file(), pointer_append(ps->pointer(), "transport")});
    }
    ps->finish();
  }
  if (auto v = r.optional_child("compute_variability")) {
    v->expect_keys({"distribution", "cv"});
    d.variability = v->enum_value<Variability>(
        "distribution", std::span<const Choice<Variability>>(named_choices(
                            std::array{Variability::none, Variability::normal, Variability::lognormal})));
    d.variability_cv = v->optional<double>("cv", 0.0, NumberRule::non_negative());
    if (d.variability == Variability::normal && d.variability_cv > 0.5) {
      throw v->mismatch("cv",
                        "at most 0.5 for a normal distribution (a larger one makes times negative; use "
                        "lognormal)");
    }
    v->finish();
  }
  if (auto s = r.optional_child("stragglers")) {
    s->expect_keys({"count", "slowdown"});
    d.stragglers = s->required<std::int64_t>("count", IntRule::non_negative());
    d.straggler_slowdown = s->required<double>("slowdown", NumberRule::at_least(1.0));
    s->finish();
  }
  d.steps = r.optional<std::int64_t>("simulated_steps", d.steps, IntRule::between(2, 100000));
  d.fusion_bytes = r.optional<double>("fusion_mb", 64.0, NumberRule::positive()) * kBytesPerMiB;
  d.staleness_penalty =
      r.optional<double>("staleness_penalty", d.staleness_penalty, NumberRule::non_negative());
  return d;
}

void check_layer_table_scenario(const std::string& file, const Scenario& s) {
  const ParallelismSpec& p = s.parallelism;
  if (p.tensor != 1 || p.pipeline != 1 || p.context != 1 || p.zero_stage != 0) {
    throw core::InputError(
        file, "/parallelism",
        fmt::format("layer-table models train data-parallel only; expected tensor, pipeline and "
                    "context 1 and zero_stage 0, got {}, {}, {} and {}",
                    p.tensor, p.pipeline, p.context, p.zero_stage));
  }
}

const char* to_string(LayerKind k) {
  switch (k) {
    case LayerKind::conv:
      return "conv";
    case LayerKind::fc:
      return "fc";
    case LayerKind::attention:
      return "attention";
    case LayerKind::pool:
      return "pool";
    case LayerKind::embedding:
      return "embedding";
    case LayerKind::norm:
      return "norm";
    case LayerKind::add:
      return "add";
  }
  return "?";
}

const char* to_string(Epilogue e) {
  switch (e) {
    case Epilogue::none:
      return "none";
    case Epilogue::bn:
      return "bn";
    case Epilogue::relu:
      return "relu";
    case Epilogue::bn_relu:
      return "bn_relu";
    case Epilogue::softmax:
      return "softmax";
    case Epilogue::gelu:
      return "gelu";
    case Epilogue::layernorm:
      return "layernorm";
  }
  return "?";
}

const char* to_string(Architecture a) {
  switch (a) {
    case Architecture::allreduce:
      return "allreduce";
    case Architecture::parameter_server:
      return "parameter_server";
    case Architecture::hybrid:
      return "hybrid";
  }
  return "?";
}

const char* to_string(SyncMode s) {
  switch (s) {
    case SyncMode::sync:
      return "sync";
    case SyncMode::async:
      return "async";
    case SyncMode::bounded:
      return "bounded";
  }
  return "?";
}

const char* to_string(VariablePlacement p) {
  switch (p) {
    case VariablePlacement::round_robin:
      return "round_robin";
    case VariablePlacement::greedy_by_size:
      return "greedy_by_size";
  }
  return "?";
}

const char* to_string(ServerPlacement p) {
  switch (p) {
    case ServerPlacement::colocated:
      return "colocated";
    case ServerPlacement::dedicated:
      return "dedicated";
  }
  return "?";
}

const char* to_string(Variability v) {
  switch (v) {
    case Variability::none:
      return "none";
    case Variability::normal:
      return "normal";
    case Variability::lognormal:
      return "lognormal";
  }
  return "?";
}

}  // namespace dtsim::config
