#include "config/scenario_loader.hpp"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <iterator>
#include <sstream>
#include <system_error>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "config/cluster_loader.hpp"
#include "config/dlrm_loader.hpp"
#include "config/failures_loader.hpp"
#include "config/input_pipeline_loader.hpp"
#include "config/json_reader.hpp"
#include "config/layer_table_loader.hpp"
#include "config/mlp_reader.hpp"
#include "config/parallelism_loader.hpp"
#include "config/profile_loader.hpp"
#include "core/units.hpp"

namespace dtsim::config {

using nlohmann::json;

namespace {

constexpr std::int64_t kSchemaVersion = 1;

DataPaths data_paths_under(const std::filesystem::path& root) {
  return DataPaths{(root / "hardware_profiles").string(), (root / "models" / "presets").string(),
                   (root / "schemas").string()};
}

// models/dlrm/presets, beside the transformer presets folder.
std::string dlrm_presets_folder(const DataPaths& data) {
  return (std::filesystem::path(data.model_presets).parent_path() / "dlrm" / "presets").string();
}

// models/layer_table/tables, beside the transformer presets folder.
std::string layer_tables_folder(const DataPaths& data) {
  return (std::filesystem::path(data.model_presets).parent_path() / "layer_table" / "tables").string();
}

TransformerSpec read_model(ObjectReader& top, const DataPaths& data, const SoftwareStack& software,
                           Scenario& scenario) {
  ObjectReader model = top.child("model");
  // The software stack's kernels, unless the scenario names its own.
  const auto with_software = [&](TransformerSpec spec) {
    if (software.attention && !model.has("attention")) spec.attention = *software.attention;
    if (software.elementwise_kernels && !model.has("elementwise_kernels"))
      spec.elementwise_kernels = *software.elementwise_kernels;
    if (software.vocab_padding && !model.has("vocab_padding")) spec.vocab_padding = *software.vocab_padding;
    // read_transformer refuses a model's own unfused kernels with latent attention; a stack's as well.
    if (spec.mla && spec.elementwise_kernels != ElementwiseKernels::fused) {
      throw top.mismatch("software",
                         fmt::format("a stack with fused elementwise kernels for a model with mla (this "
                                     "one runs \"{}\" kernels; eager latent attention is not modelled)",
                                     to_string(spec.elementwise_kernels)));
    }
    return spec;
  };
  if (model.has("layer_table")) {
    model.expect_keys({"layer_table"});
    const std::string id = model.required<std::string>("layer_table");
    scenario.layer_model =
        load_layer_table(layer_tables_folder(data), id,
                         IdLocation{model.file(), pointer_append(model.pointer(), "layer_table")});
    model.finish();
    return TransformerSpec{};
  }
  // Peek at the kind without reading it: the chosen reader declares and reads the keys.
  const json& raw = model.value();
  if (raw.is_object() && raw.contains("kind") && raw["kind"] == "mlp") return read_mlp(model);
  if (raw.is_object() && raw.contains("kind") && raw["kind"] == "dlrm") {
    scenario.dlrm = read_dlrm(model, dlrm_presets_folder(data));
    return TransformerSpec{};
  }
  if (model.find("preset") == nullptr) return with_software(read_transformer(model, std::nullopt));
  const std::string id = model.required<std::string>("preset");
  const TransformerSpec preset = load_model_preset(
      data.model_presets, id, IdLocation{model.file(), pointer_append(model.pointer(), "preset")});
  TransformerSpec spec = with_software(read_transformer(model, preset));
  spec.preset = id;
  return spec;
}

// training.recompute_modules: a non-empty array of distinct module names, with selective recompute only.
RecomputeModules read_recompute_modules(ObjectReader& r, Recompute recompute, bool moe, bool mla) {
  RecomputeModules out;
  const json* found = r.find("recompute_modules");
  if (found == nullptr) return out;
  if (recompute != Recompute::selective) {
    throw r.error_at("recompute_modules", fmt::format("applies to \"activation_recompute\": \"selective\", "
                                                      "but it is \"{}\"; expected no such key",
                                                      to_string(recompute)));
  }
  const std::string at = pointer_append(r.pointer(), "recompute_modules");
  const char* expected = "\"core_attn\", \"layernorm\", \"moe_act\" or \"mla_up_proj\"";
  if (!found->is_array() || found->empty()) {
    throw core::InputError(
        r.file(), at,
        fmt::format("got {}; expected a non-empty array of {}",
                    found->is_array() ? "an empty array" : json_type_name(*found), expected));
  }
  out.core_attn = false;
  for (std::size_t i = 0; i < found->size(); ++i) {
    const json& v = (*found)[i];
    const std::string name = v.is_string() ? v.get<std::string>() : std::string();
    bool* module = name == "core_attn"     ? &out.core_attn
                   : name == "layernorm"   ? &out.layernorm
                   : name == "moe_act"     ? &out.moe_act
                   : name == "mla_up_proj" ? &out.mla_up_proj
                                           : nullptr;
    if (module == nullptr) {
      throw core::InputError(r.file(), pointer_append(at, i),
                             fmt::format("got {}; expected {}", v.dump(), expected));
    }
    if (*module)
      throw core::InputError(r.file(), pointer_append(at, i), fmt::format("\"{}\" given twice", name));
    if (name == "moe_act" && !moe) {
      throw core::InputError(r.file(), pointer_append(at, i),
                             "\"moe_act\" recomputes a mixture of experts' activation; the model has no "
                             "\"moe\" block");
    }
    if (name == "mla_up_proj" && !mla) {
      throw core::InputError(r.file(), pointer_append(at, i),
                             "\"mla_up_proj\" recomputes latent attention's up projections; the model has no "
                             "\"mla\" block");
    }
    *module = true;
  }
  return out;
}

TrainingSpec read_training(ObjectReader& top, const DataPaths& data, const SoftwareStack& software,
                           Scenario& scenario) {
  ObjectReader r = top.child("training");
  r.expect_keys({"global_batch_size",
                 "micro_batch_size",
                 "precision",
                 "activation_recompute",
                 "recompute_modules",
                 "overlap_grad_reduce",
                 "overlap_param_gather",
                 "bucket_mb",
                 "optimizer",
                 "architecture",
                 "sync",
                 "staleness_bound",
                 "parameter_server",
                 "compute_variability",
                 "stragglers",
                 "simulated_steps",
                 "fusion_mb",
                 "staleness_penalty",
                 "measured_single_gpu",
                 "host_issue_us_per_kernel",
                 "host_issue_us_per_tensor_op",
                 "host_checkpoint_us",
                 "host_sync_before_optimizer",
                 "grad_accumulation",
                 "autocast",
                 "master_weights",
                 "fp8_recipe"});
  if (scenario.layer_model) {
    scenario.data_parallel = read_data_parallel(r, data.hardware_profiles);
  } else {
    for (const char* key :
         {"architecture", "sync", "staleness_bound", "parameter_server", "compute_variability", "stragglers",
          "simulated_steps", "fusion_mb", "staleness_penalty"}) {
      if (r.has(key)) {
        throw r.error_at(key,
                         "this key applies to data-parallel training of a layer-table model; expected "
                         "\"model\": {\"layer_table\": ...} or no such key");
      }
    }
  }
  if (scenario.dlrm) {
    for (const char* key :
         {"micro_batch_size", "activation_recompute", "recompute_modules", "overlap_param_gather",
          "grad_accumulation", "autocast", "master_weights", "fp8_recipe"}) {
      if (r.has(key)) {
        throw r.error_at(key, "applies to transformer and MLP models; a DLRM trains each GPU's share of the "
                              "global batch at once; expected no such key");
      }
    }
  }
  TrainingSpec t;
  t.global_batch_size = r.required<std::int64_t>("global_batch_size", IntRule::positive());
  t.micro_batch_size = r.optional<std::int64_t>("micro_batch_size", 1, IntRule::positive());
  t.precision =
      r.optional_enum<Precision>("precision", Precision::bf16,
                                 named_choices(std::array{Precision::bf16, Precision::fp16, Precision::fp32,
                                                          Precision::tf32, Precision::fp8}));
  t.activation_recompute = r.optional_enum<Recompute>(
      "activation_recompute", Recompute::none,
      named_choices(std::array{Recompute::none, Recompute::selective, Recompute::full}));
  t.recompute_modules = read_recompute_modules(r, t.activation_recompute, scenario.model.moe.has_value(),
                                               scenario.model.mla.has_value());
  t.overlap_grad_reduce =
      r.optional<bool>("overlap_grad_reduce", software.overlap_grad_reduce.value_or(true));
  t.overlap_param_gather =
      r.optional<bool>("overlap_param_gather", software.overlap_param_gather.value_or(true));
  t.bucket_bytes = r.optional<double>("bucket_mb", 40.0, NumberRule::positive()) * core::kBytesPerMb;
  t.host_issue_us_per_kernel =
      r.optional<double>("host_issue_us_per_kernel",
                         software.host_issue_us_per_kernel.value_or(TrainingSpec{}.host_issue_us_per_kernel),
                         NumberRule::between(0.0, kMaxHostIssueUsPerKernel));
  t.host_issue_us_per_tensor_op = r.optional<double>(
      "host_issue_us_per_tensor_op",
      software.host_issue_us_per_tensor_op.value_or(TrainingSpec{}.host_issue_us_per_tensor_op),
      NumberRule::between(0.0, kMaxHostIssueUsPerKernel));
  t.host_checkpoint_us = r.optional<double>(
      "host_checkpoint_us", software.host_checkpoint_us.value_or(TrainingSpec{}.host_checkpoint_us),
      NumberRule::between(0.0, kMaxHostIssueUsPerKernel));
  t.host_sync_before_optimizer = r.optional<bool>(
      "host_sync_before_optimizer",
      software.host_sync_before_optimizer.value_or(TrainingSpec{}.host_sync_before_optimizer));
  t.grad_accumulation = r.optional_enum<GradAccumulation>(
      "grad_accumulation", software.grad_accumulation.value_or(TrainingSpec{}.grad_accumulation),
      named_choices(kGradAccumulations));
  t.autocast = r.optional<bool>("autocast", software.autocast.value_or(TrainingSpec{}.autocast));
  t.fp8_recipe = r.optional_enum<Fp8Recipe>("fp8_recipe", software.fp8_recipe.value_or(TrainingSpec{}.fp8_recipe),
                                            named_choices(kFp8Recipes));
  if (t.autocast && t.precision != Precision::bf16 && t.precision != Precision::fp16) {
    throw r.error_at(r.has("autocast") ? "autocast" : "precision",
                     fmt::format("autocast with precision {}; expected precision \"bf16\" or \"fp16\" (autocast "
                                 "casts FP32 parameters to 16 bits) or \"autocast\": false",
                                 to_string(t.precision)));
  }
  // A stack's BF16-only parameters do not apply under autocast, whose FP32 parameters are the optimizer's.
  t.master_weights = r.optional<bool>(
      "master_weights", t.autocast ? TrainingSpec{}.master_weights
                                   : software.master_weights.value_or(TrainingSpec{}.master_weights));
  if (!t.master_weights && t.autocast) {
    throw r.error_at("master_weights",
                     "got false with autocast; expected true or no such key (under autocast the FP32 "
                     "parameters are the optimizer's weights: there is no 16-bit copy to update in place)");
  }
  if (scenario.model.moe &&
      (t.autocast || (t.precision == Precision::fp8 && t.fp8_recipe != Fp8Recipe::delayed))) {
    // The expert layers are costed without autocast's casts, and in FP8 under delayed scaling only
    // (models/transformer/moe.hpp).
    throw r.error_at(t.autocast            ? "autocast"
                     : r.has("fp8_recipe") ? "fp8_recipe"
                                           : "precision",
                     t.autocast
                         ? "got autocast with a mixture-of-experts model; expected \"autocast\": false "
                           "(dtsim does not cost autocast's casts in expert layers yet)"
                         : fmt::format("got \"{}\" with a mixture-of-experts model in FP8; expected "
                                       "\"delayed\" (Transformer Engine's grouped GEMMs: torchao's "
                                       "tensorwise recipe converts nn.Linear modules, not expert GEMMs)",
                                       to_string(t.fp8_recipe)));
  }
  t.optimizer = scenario.dlrm ? r.optional_enum<Optimizer>(
                                    "optimizer", Optimizer::adagrad,
                                    named_choices(std::array{Optimizer::adagrad, Optimizer::sgd, Optimizer::adam}))
                              : r.optional_enum<Optimizer>("optimizer", Optimizer::adam,
                                                           named_choices(std::array{Optimizer::adam, Optimizer::sgd}));
  if (std::optional<ObjectReader> m = r.optional_child("measured_single_gpu")) {
    m->expect_keys({"samples_per_s", "source"});
    MeasuredSingleGpu measured;
    measured.samples_per_s = m->required<double>("samples_per_s", NumberRule::positive());
    measured.source = m->required<std::string>("source");
    m->finish();
    t.measured_single_gpu = measured;
  }
  r.finish();
  return t;
}

SimulationSpec read_simulation(ObjectReader& top) {
  const json empty = json::object();
  const json* found = top.find("simulation");
  ObjectReader r(found != nullptr ? *found : empty, top.file(), pointer_append(top.pointer(), "simulation"));
  r.expect_keys({"network", "ranks", "seed", "jitter_iterations"});
  SimulationSpec s;
  s.network = r.optional_enum<NetworkFidelity>(
      "network", NetworkFidelity::analytic,
      named_choices(std::array{NetworkFidelity::analytic, NetworkFidelity::flow, NetworkFidelity::packet}));
  if (s.network == NetworkFidelity::packet) {
    throw r.mismatch(
        "network",
        "\"analytic\" or \"flow\": the packet level (SimGrid's ns-3 model) is not supported: the ns-3 "
        "binding of SimGrid 3.32 as Debian builds it aborts on transfers of a megabyte");
  }
  s.ranks = r.optional_enum<RankMode>("ranks", RankMode::symmetric,
                                      named_choices(std::array{RankMode::symmetric, RankMode::all}));
  s.seed = static_cast<std::uint64_t>(r.optional<std::int64_t>("seed", 1, IntRule::non_negative()));
  s.jitter_iterations = r.optional<std::int64_t>("jitter_iterations", s.jitter_iterations,
                                                 IntRule::between(1, kMaxJitterIterations));
  r.finish();
  return s;
}

}  // namespace

DataPaths default_data_paths() {
  if (const char* dir = std::getenv("DTSIM_DATA_DIR"); dir != nullptr && *dir != '\0')
    return data_paths_under(dir);
  const std::filesystem::path installed(DTSIM_INSTALLED_DATA_DIR);
  std::error_code ec;
  if (std::filesystem::is_directory(installed / "hardware_profiles", ec)) return data_paths_under(installed);
  return data_paths_under(DTSIM_SOURCE_DATA_DIR);
}

Scenario load_scenario(const std::string& path, const DataPaths& data) {
  if (path == "-") return load_scenario_text(read_text_stream(std::cin, path), path, data);
  return load_scenario_text(read_text_file(path), path, data);
}

Scenario load_cluster(const ClusterRequest& request, const std::string& source, const DataPaths& data) {
  json cluster = {{"node", request.node}, {"nodes", request.nodes}};
  json network = json::object();
  if (request.fabric) network["fabric"] = *request.fabric;
  if (request.nic_gbps) network["nic_gbps"] = *request.nic_gbps;
  if (request.nics_per_node) network["nics_per_node"] = *request.nics_per_node;
  if (request.oversubscription)
    network["topology"] = {{"kind", "fat-tree"}, {"oversubscription", *request.oversubscription}};
  if (!network.empty()) cluster["network"] = network;
  const json doc = {{"cluster", cluster}};
  ObjectReader top(doc, source, "");
  Scenario scenario;
  scenario.source = source;
  scenario.name = "cluster";
  read_cluster(top, data, scenario);
  return scenario;
}

Scenario load_scenario_text(const std::string& text, const std::string& source_name, const DataPaths& data) {
  const json doc = parse_json_text(text, source_name);
  ObjectReader top(doc, source_name, "");

  // The version decides how to read everything else, so it comes first.
  if (!top.has("schema_version")) throw top.mismatch("schema_version", "1");
  const std::int64_t version = top.required<std::int64_t>("schema_version", IntRule::any());
  if (version != kSchemaVersion) {
    throw top.error_at("schema_version", fmt::format("unsupported schema_version {}; this dtsim reads {}",
                                                     version, kSchemaVersion));
  }
  top.expect_keys({"schema_version", "name", "software", "model", "cluster", "parallelism", "training", "simulation",
                   "failures", "input"});

  Scenario scenario;
  scenario.source = source_name;
  scenario.name = top.required<std::string>("name");
  // The software stack first: it gives defaults to keys of the other sections.
  SoftwareStack software;
  if (top.has("software")) {
    scenario.software = top.required<std::string>("software");
    software = load_software_stack(data.hardware_profiles, scenario.software,
                                   IdLocation{top.file(), pointer_append(top.pointer(), "software")});
    scenario.software_support = software.support;
  }
  scenario.model = read_model(top, data, software, scenario);
  read_cluster(top, data, scenario);
  scenario.parallelism = read_parallelism(top, scenario, software);
  scenario.training = read_training(top, data, software, scenario);
  if (scenario.layer_model) check_layer_table_scenario(top.file(), scenario);
  if (scenario.dlrm) check_dlrm_scenario(top.file(), scenario);
  scenario.simulation = read_simulation(top);
  check_cluster(top.file(), scenario);
  scenario.failures = read_failures(top, data.hardware_profiles, {});
  check_failures(top.file(), scenario);
  scenario.input = read_input(top, scenario);
  top.finish();
  return scenario;
}

}  // namespace dtsim::config
