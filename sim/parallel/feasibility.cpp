#include "parallel/feasibility.hpp"

#include <fmt/format.h>

#include "core/checked_math.hpp"
#include "models/transformer/layer_kinds.hpp"

namespace dtsim::parallel {

namespace {

// a x b for a message: the product, or "a x b" when it passes 64 bits.
std::string product_text(std::int64_t a, std::int64_t b) {
  const auto p = core::checked_mul(a, b);
  return p ? std::to_string(*p) : fmt::format("{} x {}", a, b);
}

// With simulation.ranks "all", the GPUs of a pipeline stage, each of which the lowering simulates;
// nothing in symmetric mode (one simulated rank per stage).
std::optional<std::int64_t> every_rank_stage_gpus(const config::Scenario& s) {
  if (s.simulation.ranks != config::RankMode::all) return std::nullopt;
  return s.gpu_count() / s.parallelism.pipeline;
}

// Folded experts (expert_tensor 1, tensor > 1): the expert group takes e consecutive ranks of the
// stage in tensor, context, data order (mesh.hpp). Every group must be its first one shifted (the
// layouts assume it), so e divides the tensor degree, or covers whole tensor groups and divides the
// context degree in them, or covers whole tensor x context blocks and divides the data degree in them.
std::optional<std::string> folded_expert_infeasible(const config::ParallelismSpec& p) {
  const std::int64_t e = p.expert;
  const std::int64_t tc = p.tensor * p.context;
  const bool aligned = p.tensor % e == 0 || (e % p.tensor == 0 && p.context % (e / p.tensor) == 0) ||
                       (e % tc == 0 && p.data % (e / tc) == 0);
  if (aligned) return std::nullopt;
  return fmt::format(
      "expert parallel {} with expert_tensor 1 must divide tensor {}, or cover whole tensor groups and "
      "divide context {} by their count, or cover whole tensor x context blocks and divide data {} by "
      "their count (the expert group takes the stage's ranks in tensor, context, data order)",
      e, p.tensor, p.context, p.data);
}

// A mixture-of-experts plan: the expert degree splits the experts and the data-parallel ranks (the
// expert group lies inside the data group: mesh.hpp) or, folded, the stage's ranks; the expert widths
// split over the expert tensor group, the shared experts' over the tensor group; and the expert layers
// need what Megatron-Core needs of them.
std::optional<std::string> moe_infeasible(const config::Scenario& s) {
  const config::MoeSpec& moe = *s.model.moe;
  const auto& p = s.parallelism;
  const std::int64_t et = p.expert_tensor_degree();
  if (moe.experts % p.expert != 0) {
    return fmt::format("experts {} are not divisible by expert parallel {}", moe.experts, p.expert);
  }
  if (et != p.tensor && et != 1) {
    return fmt::format(
        "expert_tensor {}: only 1 (experts not split, folded over the tensor ranks) or the tensor "
        "degree {} is modelled",
        et, p.tensor);
  }
  if (!p.folded_experts() && p.data % p.expert != 0) {
    return fmt::format(
        "data parallel {} is not divisible by expert parallel {} (the expert group lies inside "
        "the data-parallel group)",
        p.data, p.expert);
  }
  if (p.folded_experts()) {
    if (auto why = folded_expert_infeasible(p)) return why;
  }
  if (moe.expert_ffn_hidden_size % et != 0 || moe.shared_ffn_hidden_size % p.tensor != 0) {
    return fmt::format(
        "expert_ffn_hidden_size {} must be divisible by expert tensor parallel {} and "
        "shared_ffn_hidden_size {} by tensor parallel {}",
        moe.expert_ffn_hidden_size, et, moe.shared_ffn_hidden_size, p.tensor);
  }
  if (p.tensor > 1 && !p.sequence_parallel) {
    return fmt::format(
        "a mixture-of-experts layer with tensor parallel {} needs sequence parallelism "
        "(Megatron-Core's rule for expert and tensor parallelism together)",
        p.tensor);
  }
  if (p.expert_comm_overlap) return combined_1f1b_infeasible(s);
  return std::nullopt;
}

}  // namespace

std::optional<std::string> per_gpu_data_parallel_infeasibility(const config::Scenario& s) {
  const std::int64_t gpus = s.gpu_count();
  if (s.parallelism.data != gpus) {
    return fmt::format("data parallel {} is not the cluster's {} GPUs (one data-parallel worker per GPU)",
                       s.parallelism.data, gpus);
  }
  if (s.training.global_batch_size % gpus != 0) {
    return fmt::format("global batch {} is not divisible by the {} GPUs (one data-parallel worker per GPU)",
                       s.training.global_batch_size, gpus);
  }
  return std::nullopt;
}

std::optional<std::string> layer_table_infeasibility(const config::Scenario& s) {
  const std::int64_t gpus = s.gpu_count();
  if (auto why = per_gpu_data_parallel_infeasibility(s)) return why;
  const config::DataParallelSpec& d = s.data_parallel;
  if (d.architecture != config::Architecture::allreduce &&
      d.parameter_server.placement == config::ServerPlacement::colocated &&
      d.parameter_server.servers > s.cluster.nodes) {
    return fmt::format("{} colocated parameter servers on {} nodes (one per node at most)",
                       d.parameter_server.servers, s.cluster.nodes);
  }
  if (d.stragglers > gpus) return fmt::format("{} stragglers among {} workers", d.stragglers, gpus);
  return std::nullopt;
}

std::optional<std::string> combined_1f1b_infeasible(const config::Scenario& s) {
  const auto& p = s.parallelism;
  const std::string what = "the combined 1F1B schedule (expert_comm_overlap)";
  if (p.expert < 2) return fmt::format("{} overlaps expert-parallel exchanges and needs expert > 1", what);
  if (s.training.activation_recompute == config::Recompute::full) {
    return fmt::format("{} runs without full activation recompute (Megatron-Core refuses the two together)",
                       what);
  }
  if (p.pipeline > 1 && p.schedule != config::Schedule::interleaved) {
    return fmt::format(
        "{} with a pipeline needs the interleaved schedule (Megatron-Core's rule); the schedule is {}", what,
        config::to_string(p.schedule));
  }
  if (p.schedule == config::Schedule::gpipe) {
    return fmt::format("{} pairs 1F1B's steady forward and backward steps; GPipe runs every forward first",
                       what);
  }
  const config::Precision precision = s.training.precision;
  if (s.training.autocast || (precision != config::Precision::bf16 && precision != config::Precision::fp16 &&
                              precision != config::Precision::fp8)) {
    return fmt::format("{} runs a bf16 or fp16 model (Megatron-Core's rule); the precision is {}{}", what,
                       config::to_string(precision), s.training.autocast ? " under autocast" : "");
  }
  if (s.model.mtp_layers > 1) {
    return fmt::format(
        "{} runs at most one multi-token prediction module (Megatron-Core's rule); the model has {}", what,
        s.model.mtp_layers);
  }
  if (p.zero_stage >= 3) return fmt::format("{} is not modelled with ZeRO-3", what);
  return std::nullopt;
}

std::int64_t micro_batches(const config::Scenario& s) {
  const auto replica_batch = core::checked_mul(s.parallelism.data, s.training.micro_batch_size);
  return replica_batch ? s.training.global_batch_size / *replica_batch : 0;
}

double layer_passes(const config::Scenario& s) {
  const double ranks_per_stage = static_cast<double>(every_rank_stage_gpus(s).value_or(1));
  // Multi-token prediction modules run a layer each (models/transformer/mtp.hpp).
  return 2.0 * ranks_per_stage * static_cast<double>(micro_batches(s)) *
         static_cast<double>(s.model.layers + s.model.mtp_layers);
}

std::optional<std::string> infeasibility(const config::Scenario& s) {
  const auto& m = s.model;
  const auto& p = s.parallelism;
  const auto& t = s.training;
  std::optional<std::int64_t> product = core::checked_mul(p.data, p.tensor);
  if (product) product = core::checked_mul(*product, p.pipeline);
  if (product) product = core::checked_mul(*product, p.context);
  if (product != s.gpu_count()) {
    return fmt::format("data x tensor x pipeline x context = {} x {} x {} x {}{} is not the cluster's {} GPUs "
                       "({} nodes x {} GPUs{})",
                       p.data, p.tensor, p.pipeline, p.context,
                       product ? fmt::format(" = {}", *product) : " (past 64 bits)", s.gpu_count(),
                       s.cluster.nodes, s.node.gpus_per_node, s.cluster.gpus ? " in use of each" : "");
  }
  if (!s.gpu.peak_tflops[static_cast<int>(t.precision)]) {
    return fmt::format("{} has no {} support (no peak in its profile)", s.gpu.id,
                       config::to_string(t.precision));
  }
  if (t.precision == config::Precision::fp8 && !s.gpu.peak_tflops[static_cast<int>(config::Precision::bf16)]) {
    return fmt::format("{} has no bf16 peak in its profile, which an fp8 run needs for everything but its "
                       "linear layers' GEMMs",
                       s.gpu.id);
  }
  for (const config::MixedGpus& e : s.cluster.mixed_gpus) {
    if (!e.gpu.peak_tflops[static_cast<int>(t.precision)] ||
        (t.precision == config::Precision::fp8 && !e.gpu.peak_tflops[static_cast<int>(config::Precision::bf16)])) {
      return fmt::format("{} (cluster.mixed_gpus, nodes {}-{}) has no {} support (no peak in its profile)", e.gpu.id,
                         e.first_node, e.first_node + e.nodes - 1, config::to_string(t.precision));
    }
  }
  if (m.kind == config::ModelKind::mlp && (p.tensor > 1 || p.context > 1 || p.expert > 1)) {
    return fmt::format(
        "the mlp model supports data and pipeline parallelism only (tensor {}, context {}, expert {})",
        p.tensor, p.context, p.expert);
  }
  if (auto why = config::unsupported_by_stack(s)) return why;
  if (m.heads % p.tensor != 0)
    return fmt::format("heads {} are not divisible by tensor parallel {}", m.heads, p.tensor);
  if (m.kv_heads % p.tensor != 0 && p.tensor % m.kv_heads != 0) {
    return fmt::format("kv_heads {} and tensor parallel {}: neither divides the other", m.kv_heads, p.tensor);
  }
  if ((!m.moe || m.moe->first_dense_layers > 0) && m.ffn_hidden_size % p.tensor != 0) {
    return fmt::format("ffn_hidden_size {} is not divisible by tensor parallel {}", m.ffn_hidden_size,
                       p.tensor);
  }
  if (m.moe) {
    if (auto why = moe_infeasible(s)) return why;
  }
  if (m.mtp_layers > 0 && p.zero_stage >= 3) {
    return std::string(
        "ZeRO-3 (fully sharded parameters) is not modelled with multi-token prediction (model.mtp_layers); "
        "use zero_stage <= 2 or the distributed optimizer");
  }
  const auto chunks = core::checked_mul(p.pipeline, p.virtual_stages);
  // The first and the last chunk may hold only the embedding and the output layer
  // (pipeline_schedule.hpp, chunk_layers).
  if (!chunks || m.layers < *chunks - 2) {
    return fmt::format(
        "layers {} are fewer than pipeline x virtual_stages = {} model chunks less the two ends "
        "(the first and the last chunk may hold only the embedding and the output layer)",
        m.layers, product_text(p.pipeline, p.virtual_stages));
  }
  if (p.context > 1 && models::attended_keys(m) < static_cast<double>(m.seq_length)) {
    return fmt::format(
        "context parallelism ({}) is not modelled with sliding-window attention (model.sliding_window: "
        "its key/value ring and load-balanced split assume full causal attention); use context 1",
        p.context);
  }
  if (p.context > 1 && m.seq_length % (2 * p.context) != 0) {  // context <= GPUs: 2 x context fits
    return fmt::format(
        "seq_length {} is not divisible by 2 x context parallel = {} (load-balanced causal split)",
        m.seq_length, 2 * p.context);
  }
  const auto replica_batch = core::checked_mul(p.data, t.micro_batch_size);
  if (!replica_batch || t.global_batch_size % *replica_batch != 0) {
    return fmt::format("global_batch_size {} is not divisible by data parallel x micro_batch_size = {}",
                       t.global_batch_size, product_text(p.data, t.micro_batch_size));
  }
  const std::int64_t m_count = micro_batches(s);
  if (p.schedule == config::Schedule::interleaved && m_count % p.pipeline != 0) {
    return fmt::format("interleaved schedule needs micro-batches per replica ({}) divisible by pipeline {}",
                       m_count, p.pipeline);
  }
  const double passes = layer_passes(s);
  if (passes > static_cast<double>(kMaxSimulated)) {
    const std::optional<std::int64_t> stage_gpus = every_rank_stage_gpus(s);
    return fmt::format(
        "too large to simulate: {:.3g} layer passes ({} micro-batches x {} layers x forward and backward{}), "
        "over dtsim's limit of {}; use a smaller global batch{}",
        passes, m_count, m.layers, stage_gpus ? fmt::format(" x {} GPUs per stage", *stage_gpus) : "",
        kMaxSimulated, stage_gpus ? " or simulation.ranks \"symmetric\"" : "");
  }
  return std::nullopt;
}

}  // namespace dtsim::parallel
