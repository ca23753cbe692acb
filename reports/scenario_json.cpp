// The resolved scenario in Scenario v1 form (docs/scenario-and-result.md "Scenario v1"): presets expanded, defaults filled in,
// so that a result names everything it was computed from. Enumerations use their JSON names
// (config::to_string); sizes keep the units of their keys.
#include "core/units.hpp"
#include "reports/dlrm_report.hpp"
#include "reports/data_parallel_report.hpp"
#include "reports/goodput_report.hpp"
#include "reports/input_report.hpp"
#include "reports/reports.hpp"

namespace dtsim::reports {

namespace {

nlohmann::ordered_json model_json(const config::TransformerSpec& model) {
  nlohmann::ordered_json j;
  if (model.kind == config::ModelKind::mlp) {
    j["kind"] = "mlp";
    j["layers"] = model.layers;
    j["hidden_size"] = model.hidden_size;
    j["input_size"] = model.input_size;
    j["output_size"] = model.output_size;
    return j;
  }
  j["kind"] = "transformer";
  if (!model.preset.empty()) j["preset"] = model.preset;
  j["layers"] = model.layers;
  j["hidden_size"] = model.hidden_size;
  j["heads"] = model.heads;
  j["kv_heads"] = model.kv_heads;
  if (model.head_dim > 0) j["head_dim"] = model.head_dim;  // stated only where it is not hidden / heads
  j["ffn_hidden_size"] = model.ffn_hidden_size;
  j["vocab_size"] = model.vocab_size;
  j["seq_length"] = model.seq_length;
  j["mlp"] = config::to_string(model.mlp);
  j["attention"] = config::to_string(model.attention);
  j["elementwise_kernels"] = config::to_string(model.elementwise_kernels);
  j["tied_embeddings"] = model.tied_embeddings;
  j["vocab_padding"] = model.vocab_padding;
  if (model.mtp_layers > 0) j["mtp_layers"] = model.mtp_layers;
  if (model.sliding_window) {
    j["sliding_window"] = {{"window", model.sliding_window->window},
                           {"full_attention_every", model.sliding_window->full_attention_every}};
  }
  if (model.moe) {
    const config::MoeSpec& moe = *model.moe;
    nlohmann::ordered_json m;
    m["experts"] = moe.experts;
    m["top_k"] = moe.top_k;
    m["expert_ffn_hidden_size"] = moe.expert_ffn_hidden_size;
    m["shared_ffn_hidden_size"] = moe.shared_ffn_hidden_size;
    m["load_imbalance"] = moe.load_imbalance;
    if (moe.capacity_factor) m["capacity_factor"] = *moe.capacity_factor;
    if (moe.max_nodes_per_token) m["max_nodes_per_token"] = *moe.max_nodes_per_token;
    if (moe.first_dense_layers > 0) m["first_dense_layers"] = moe.first_dense_layers;
    if (moe.routing != config::MoeRouting::uniform) m["routing"] = config::to_string(moe.routing);
    j["moe"] = std::move(m);
  }
  if (model.mla) {
    nlohmann::ordered_json m;
    m["q_lora_rank"] = model.mla->q_lora_rank;
    m["kv_lora_rank"] = model.mla->kv_lora_rank;
    m["qk_nope_head_dim"] = model.mla->qk_nope_head_dim;
    m["qk_rope_head_dim"] = model.mla->qk_rope_head_dim;
    m["v_head_dim"] = model.mla->v_head_dim;
    j["mla"] = std::move(m);
  }
  return j;
}

nlohmann::ordered_json cluster_json(const config::Scenario& scenario) {
  const config::NetworkSpec& network = scenario.cluster.network;
  nlohmann::ordered_json topology;
  topology["kind"] = config::to_string(network.topology);
  topology["oversubscription"] = network.oversubscription;
  // Tier keys are echoed where they differ from their defaults (one node per leaf, one pod).
  if (network.nodes_per_leaf != 1) topology["nodes_per_leaf"] = network.nodes_per_leaf;
  if (network.leaves_per_pod) {
    topology["leaves_per_pod"] = *network.leaves_per_pod;
    topology["core_oversubscription"] = network.core_oversubscription;
  }

  nlohmann::ordered_json net;
  net["fabric"] = network.fabric;
  net["nic_gbps"] = network.nic_gbps;
  net["nics_per_node"] = network.nics_per_node;
  net["topology"] = std::move(topology);
  net["all_reduce_algorithm"] = config::to_string(network.all_reduce_algorithm);
  net["protocol"] = config::to_string(network.protocol);

  nlohmann::ordered_json j;
  j["node"] = scenario.cluster.node_id;
  j["nodes"] = scenario.cluster.nodes;
  j["gpus"] = scenario.gpu_count();
  j["gpu"] = scenario.gpu.id;
  j["network"] = std::move(net);
  if (!scenario.cluster.speed_factors.empty()) {
    nlohmann::ordered_json factors = nlohmann::ordered_json::array();
    for (const config::SpeedFactor& f : scenario.cluster.speed_factors) {
      nlohmann::ordered_json e;
      if (f.leaf) {  // a leaf switch's uplinks
        e["leaf"] = *f.leaf;
        e["uplink"] = f.uplink;
        factors.push_back(std::move(e));
        continue;
      }
      e["node"] = f.node;
      if (f.gpu) e["gpu"] = *f.gpu;
      e["compute"] = f.compute;
      if (!f.gpu) e["nic"] = f.nic;  // a node's only
      if (!f.gpu && f.nvlink != 1.0) e["nvlink"] = f.nvlink;
      if (f.jitter_cv > 0.0) e["jitter_cv"] = f.jitter_cv;
      factors.push_back(std::move(e));
    }
    j["speed_factors"] = std::move(factors);
  }
  if (!scenario.cluster.mixed_gpus.empty()) {
    nlohmann::ordered_json mixed = nlohmann::ordered_json::array();
    for (const config::MixedGpus& m : scenario.cluster.mixed_gpus)
      mixed.push_back({{"first_node", m.first_node}, {"nodes", m.nodes}, {"gpu", m.gpu.id}});
    j["mixed_gpus"] = std::move(mixed);
  }
  return j;
}

nlohmann::ordered_json parallelism_json(const config::ParallelismSpec& p) {
  nlohmann::ordered_json j;
  j["data"] = p.data;
  j["tensor"] = p.tensor;
  j["pipeline"] = p.pipeline;
  j["virtual_stages"] = p.virtual_stages;
  j["sequence_parallel"] = p.sequence_parallel;
  j["context"] = p.context;
  j["expert"] = p.expert;
  if (p.expert_tensor) j["expert_tensor"] = *p.expert_tensor;
  j["zero_stage"] = p.zero_stage;
  if (p.zero_stage == 3) {
    j["zero3"] = {{"fetch", config::to_string(p.zero3.fetch)},
                  {"granularity", config::to_string(p.zero3.granularity)},
                  {"buffers", config::to_string(p.zero3.buffers)},
                  {"persistence_threshold", p.zero3.persistence_threshold}};
  }
  j["distributed_optimizer"] = p.distributed_optimizer;
  j["tp_comm_overlap"] = config::tp_comm_overlap_in_effect(p);
  j["tp_backward_overlap"] = p.tp_backward_overlap;
  j["order"] = config::to_string(p.order);
  j["pipeline_comm"] = config::to_string(config::pipeline_comm_in_effect(p));
  j["schedule"] = config::to_string(p.schedule);
  if (p.moe_dispatcher != config::MoeDispatcher::all_to_all)
    j["moe_dispatcher"] = config::to_string(p.moe_dispatcher);
  if (p.expert_comm_overlap) j["expert_comm_overlap"] = true;
  if (p.expert_comm_overlap && p.delay_wgrad_compute) j["delay_wgrad_compute"] = true;
  return j;
}

nlohmann::ordered_json training_json(const config::TrainingSpec& t) {
  nlohmann::ordered_json j;
  j["global_batch_size"] = t.global_batch_size;
  j["micro_batch_size"] = t.micro_batch_size;
  j["precision"] = config::to_string(t.precision);
  if (t.precision == config::Precision::fp8) j["fp8_recipe"] = config::to_string(t.fp8_recipe);
  j["activation_recompute"] = config::to_string(t.activation_recompute);
  if (t.activation_recompute == config::Recompute::selective &&
      t.recompute_modules != config::RecomputeModules{}) {
    j["recompute_modules"] = config::recompute_module_names(t.recompute_modules);
  }
  j["overlap_grad_reduce"] = t.overlap_grad_reduce;
  j["overlap_param_gather"] = t.overlap_param_gather;
  j["bucket_mb"] = t.bucket_bytes / core::kBytesPerMb;
  if (t.optimizer != config::Optimizer::adam)
    j["optimizer"] = config::to_string(t.optimizer);  // adam: the default
  if (t.measured_single_gpu) {
    j["measured_single_gpu"] = {{"samples_per_s", t.measured_single_gpu->samples_per_s},
                                {"source", t.measured_single_gpu->source}};
  }
  return j;
}

nlohmann::ordered_json simulation_json(const config::SimulationSpec& s) {
  nlohmann::ordered_json j;
  j["network"] = config::to_string(s.network);
  j["ranks"] = config::to_string(s.ranks);
  j["seed"] = s.seed;
  j["jitter_iterations"] = s.jitter_iterations;
  return j;
}

}  // namespace

nlohmann::ordered_json scenario_json(const config::Scenario& scenario) {
  nlohmann::ordered_json j;
  j["schema_version"] = 1;
  j["name"] = scenario.name;
  if (!scenario.software.empty()) j["software"] = scenario.software;  // its settings are in the keys below
  j["model"] = scenario.layer_model ? layer_model_json(*scenario.layer_model)
               : scenario.dlrm      ? dlrm_model_json(*scenario.dlrm)
                                    : model_json(scenario.model);
  j["cluster"] = cluster_json(scenario);
  j["parallelism"] = parallelism_json(scenario.parallelism);
  j["training"] = training_json(scenario.training);
  if (scenario.dlrm) {
    j["parallelism"]["embeddings"] = embedding_plan_json(scenario.parallelism.embeddings, *scenario.dlrm);
    // The keys a DLRM scenario may not state (config/dlrm_loader.hpp).
    for (const char* key : {"micro_batch_size", "activation_recompute", "overlap_param_gather"}) j["training"].erase(key);
    j["training"]["optimizer"] = config::to_string(scenario.training.optimizer);
  }
  if (scenario.layer_model) j["training"].update(data_parallel_training_json(scenario.data_parallel));
  j["simulation"] = simulation_json(scenario.simulation);
  if (scenario.failures) j["failures"] = failures_json(*scenario.failures);
  if (scenario.input) j["input"] = input_spec_json(*scenario.input);
  return j;
}

}  // namespace dtsim::reports
