#include "parallel/feasibility.hpp"

#include <fmt/format.h>

namespace dtsim::parallel {

std::int64_t micro_batches(const config::Scenario& s) {
  return s.training.global_batch_size / (s.parallelism.data * s.training.micro_batch_size);
}

std::optional<std::string> infeasibility(const config::Scenario& s) {
  const auto& m = s.model;
  const auto& p = s.parallelism;
  const auto& t = s.training;
  if (!s.gpu.peak_tflops[static_cast<int>(t.precision)]) {
    return fmt::format("{} has no {} support (no peak in its profile)", s.gpu.id, config::to_string(t.precision));
  }
  if (m.kind == config::ModelKind::mlp && (p.tensor > 1 || p.context > 1 || p.expert > 1)) {
    return fmt::format(
        "the mlp model supports data and pipeline parallelism only (tensor {}, context {}, expert {})",
        p.tensor, p.context, p.expert);
  }
  if (m.heads % p.tensor != 0) return fmt::format("heads {} are not divisible by tensor parallel {}", m.heads, p.tensor);
  if (m.kv_heads % p.tensor != 0 && p.tensor % m.kv_heads != 0) {
    return fmt::format("kv_heads {} and tensor parallel {}: neither divides the other", m.kv_heads, p.tensor);
  }
  if (m.ffn_hidden_size % p.tensor != 0) {
    return fmt::format("ffn_hidden_size {} is not divisible by tensor parallel {}", m.ffn_hidden_size, p.tensor);
  }
  const std::int64_t chunks = p.pipeline * p.virtual_stages;
  if (m.layers < chunks) {
    return fmt::format("layers {} are fewer than pipeline x virtual_stages = {} model chunks", m.layers, chunks);
  }
  if (m.seq_length % (2 * p.context) != 0 && p.context > 1) {
    return fmt::format("seq_length {} is not divisible by 2 x context parallel = {} (load-balanced causal split)",
                       m.seq_length, 2 * p.context);
  }
  if (t.global_batch_size % (p.data * t.micro_batch_size) != 0) {
    return fmt::format("global_batch_size {} is not divisible by data parallel x micro_batch_size = {}",
                       t.global_batch_size, p.data * t.micro_batch_size);
  }
  const std::int64_t m_count = micro_batches(s);
  if (p.schedule == config::Schedule::interleaved && m_count % p.pipeline != 0) {
    return fmt::format("interleaved schedule needs micro-batches per replica ({}) divisible by pipeline {}", m_count,
                       p.pipeline);
  }
  return std::nullopt;
}

}  // namespace dtsim::parallel
