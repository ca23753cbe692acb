// The terminal summary: what was run (scenario, model, cluster, parallelism), then what came out
// (status, iteration time, throughput, FLOP rates, where the time went, memory per GPU, engine work).
// Shares of the iteration are the breakdown's parts divided by the iteration time; GiB are 2^30 bytes.
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/units.hpp"
#include "reports/dlrm_report.hpp"
#include "reports/csv_report.hpp"
#include "reports/data_parallel_report.hpp"
#include "reports/goodput_report.hpp"
#include "reports/input_report.hpp"
#include "reports/reports.hpp"

namespace dtsim::reports {

namespace {

// ", sliding window 128 (full attention every 2nd layer)" where the model has one.
std::string sliding_window_text(const config::TransformerSpec& m) {
  if (!m.sliding_window) return {};
  const std::int64_t every = m.sliding_window->full_attention_every;
  const std::string full = every == 0   ? std::string()
                           : every == 1 ? std::string(" (full attention in every layer)")
                                        : fmt::format(" (full attention every {} layers)", every);
  return fmt::format(", sliding window {}{}", m.sliding_window->window, full);
}

constexpr int kLabelWidth = 13;  // the column of section labels
constexpr int kPartWidth = 24;   // the column of breakdown and memory parts

void line(std::ostream& out, std::string_view label, const std::string& text) {
  out << fmt::format("{:<{}}{}\n", label, kLabelWidth, text);
}

std::string percent(double fraction) { return fmt::format("{:.1f}%", fraction * 100.0); }

void write_setup(std::ostream& out, const config::Scenario& s) {
  const config::TransformerSpec& m = s.model;
  const std::string model_name = m.preset.empty() ? std::string("transformer") : m.preset;
  line(out, "scenario", s.name);
  if (!s.software.empty()) line(out, "software", s.software);
  if (s.dlrm) {
    write_dlrm_setup_text(out, s);
  } else if (m.kind == config::ModelKind::mlp) {
    line(out, "model",
         fmt::format("mlp: input {}, {} + 1 layers of {}, output {}, optimizer {}", m.input_size, m.layers,
                     m.hidden_size, m.output_size, config::to_string(s.training.optimizer)));
  } else {
    line(out, "model",
         fmt::format("{}: {} layers, hidden {}, ffn {}, {} heads{} ({} kv), seq {}, vocab {}", model_name,
                     m.layers, m.hidden_size, m.ffn_hidden_size, m.heads,
                     m.head_dim > 0 ? fmt::format(" of {}", m.head_dim) : std::string(), m.kv_heads,
                     m.seq_length, m.vocab_size));
    line(out, "",
         fmt::format(
             "{} mlp, {} attention{}{}{}{}", config::to_string(m.mlp), config::to_string(m.attention),
             m.mla ? fmt::format(", latent attention (q rank {}, kv rank {}, head widths {} + {} and {})",
                                 m.mla->q_lora_rank, m.mla->kv_lora_rank, m.mla->qk_nope_head_dim,
                                 m.mla->qk_rope_head_dim, m.mla->v_head_dim)
                   : std::string(),
             sliding_window_text(m),
             m.elementwise_kernels == config::ElementwiseKernels::eager ? ", eager elementwise kernels" : "",
             m.tied_embeddings ? ", tied embeddings" : ""));
  }

  const config::NetworkSpec& n = s.cluster.network;
  line(out, "cluster",
       fmt::format("{} x {}{} = {} GPUs ({}), {} {} x {} Gb/s per node, {} {}:1", s.cluster.nodes,
                   s.cluster.node_id,
                   s.cluster.gpus ? fmt::format(" ({} of its {} GPUs)", s.node.gpus_per_node, s.cluster.node_gpus)
                                  : std::string{},
                   s.gpu_count(), s.gpu.id, n.fabric, n.nics_per_node, n.nic_gbps,
                   config::to_string(n.topology), n.oversubscription));
  if (const std::string note = config::extrapolation_note(s.fabric, s.cluster.nodes); !note.empty())
    line(out, "", note);
  for (const config::SpeedFactor& f : s.cluster.speed_factors) {
    std::vector<std::string> parts;
    if (f.compute != 1.0) parts.push_back(fmt::format("compute x{}", f.compute));
    if (f.nic != 1.0) parts.push_back(fmt::format("NICs x{}", f.nic));
    if (f.nvlink != 1.0) parts.push_back(fmt::format("NVLink x{}", f.nvlink));
    if (f.jitter_cv > 0.0) parts.push_back(fmt::format("jitter CV {}", f.jitter_cv));
    if (f.uplink != 1.0) parts.push_back(fmt::format("uplinks x{}", f.uplink));
    const std::string where = f.leaf  ? fmt::format("leaf {}", *f.leaf)
                              : f.gpu ? fmt::format("node {} GPU {}", f.node, *f.gpu)
                                      : fmt::format("node {}", f.node);
    line(out, "", fmt::format("speed factor, {}{}{}", where, parts.empty() ? "" : ": ", fmt::join(parts, ", ")));
  }
  for (const config::MixedGpus& e : s.cluster.mixed_gpus) {
    line(out, "", e.nodes == 1 ? fmt::format("node {}: {} GPUs", e.first_node, e.gpu.id)
                               : fmt::format("nodes {}-{}: {} GPUs", e.first_node, e.first_node + e.nodes - 1,
                                             e.gpu.id));
  }

  if (s.dlrm) {
    write_dlrm_plan_text(out, s);
    line(out, "simulation",
         fmt::format("{} network, every rank (their embedding shards differ), seed {}",
                     config::to_string(s.simulation.network), s.simulation.seed));
    return;
  }
  const config::ParallelismSpec& p = s.parallelism;
  std::string parallel =
      fmt::format("DP {} x TP {} x PP {} x CP {}", p.data, p.tensor, p.pipeline, p.context);
  if (p.expert > 1) parallel += fmt::format(" x EP {}", p.expert);
  if (p.folded_experts()) parallel += fmt::format(" (expert TP {})", p.expert_tensor_degree());
  parallel += fmt::format(", {} schedule", config::to_string(p.schedule));
  if (p.virtual_stages > 1) parallel += fmt::format(" with {} virtual stages", p.virtual_stages);
  if (p.expert_comm_overlap) {
    parallel += " (combined 1F1B: expert exchanges beside the other micro-batch";
    parallel += p.delay_wgrad_compute ? ", weight gradients delayed)" : ")";
  }
  if (p.sequence_parallel) parallel += ", sequence parallel";
  if (config::tp_comm_overlap_in_effect(p)) parallel += " (communication overlapped)";
  if (p.tensor > 1 && !p.tp_backward_overlap) parallel += ", blocking tensor-parallel backward collectives";
  parallel += ", ZeRO-" + config::zero_stage_label(p);
  if (p.distributed_optimizer) parallel += ", distributed optimizer";
  line(out, "parallelism", parallel);

  const config::TrainingSpec& t = s.training;
  line(out, "training",
       fmt::format("global batch {}, micro batch {}, {}, recompute {}, grad reduce {}", t.global_batch_size,
                   t.micro_batch_size, config::to_string(t.precision), config::recompute_label(t),
                   t.overlap_grad_reduce ? "overlapped" : "after backward"));
  if (p.distributed_optimizer || p.zero_stage == 1 || p.zero_stage == 2) {
    line(out, "",
         fmt::format("parameter all-gather {}",
                     t.overlap_param_gather ? "overlapped with the forward pass" : "after the optimizer"));
  }
  line(out, "simulation",
       fmt::format("{} network, {} ranks, seed {}", config::to_string(s.simulation.network),
                   config::to_string(s.simulation.ranks), s.simulation.seed));
}

void write_performance(std::ostream& out, const results::Result& r) {
  line(out, "iteration", fmt::format("{:.6f} s", r.iteration_time_s));
  if (const auto& j = r.jitter) {
    line(out, "jitter", fmt::format("mean of {} sampled iterations; p50 {:.6f} s, p99 {:.6f} s, max {:.6f} s",
                                    j->iterations, j->iteration_s.p50, j->iteration_s.p99, j->iteration_s.max));
  }
  if (const auto& e = r.expected_error; e && !e->validated) {
    line(out, "error band", "none: " + e->reason + " (hardware_profiles/accuracy.json)");
  } else if (e) {
    line(out, "error band",
         fmt::format("{} (p10 .. p90 of validated runs: measured likely {:.4g} .. {:.4g} s)", results::band_range(*e),
                     e->measured_low(r.iteration_time_s), e->measured_high(r.iteration_time_s)));
    line(out, "", fmt::format("validated on: {}, n = {}, same {}", e->group, e->n, e->match));
  }
  if (r.interval) {
    line(out, "interval",
         fmt::format("{:.6f} .. {:.6f} s (calibration spread p90 .. p10)", r.interval->low_s,
                     r.interval->high_s));
  }
  line(out, "throughput",
       fmt::format("{:.2f} samples/s, {:.0f} tokens/s", r.throughput.samples_per_s,
                   r.throughput.tokens_per_s));
  if (const auto& c = r.compute_calibration) {
    line(out, "compute",
         fmt::format(
             "calibrated to {:.2f} samples/s measured on one GPU ({}): one-GPU model {:.2f} samples/s, "
             "compute durations / {:.4f}",
             c->measured_samples_per_s, c->source, c->predicted_samples_per_s, c->factor));
  }
  line(out, "TFLOP/s/GPU",
       fmt::format("model {:.1f}, hardware {:.1f}, peak {:.1f}", r.flops.model_tflops_per_gpu,
                   r.flops.hardware_tflops_per_gpu, r.flops.peak_tflops_per_gpu));
  line(out, "utilization", fmt::format("MFU {}, HFU {}", percent(r.flops.mfu), percent(r.flops.hfu)));
}

void write_breakdown(std::ostream& out, const results::Result& r) {
  const results::Breakdown& b = r.breakdown;
  const double iteration = r.iteration_time_s;
  auto row = [&](std::string_view part, double seconds) {
    const std::string share = iteration > 0.0 ? percent(seconds / iteration) : std::string("-");
    out << fmt::format("  {:<{}}{:>12.6f}{:>9}\n", part, kPartWidth, seconds, share);
  };
  out << fmt::format("\n{:<{}}{:>12}{:>9}\n", "time per iteration", kPartWidth + 2, "seconds", "share");
  for (const results::BreakdownPart& part : results::kBreakdownParts) {
    if (!part.optional || b.*part.value > 0.0) row(part.label, b.*part.value);
  }
  out << fmt::format("  {:-<{}}\n", "", kPartWidth + 21);
  row("compute", b.compute_s());
  row("exposed comm", b.exposed_comm_s());
}

void write_memory(std::ostream& out, const results::Memory& m) {
  auto row = [&](std::string_view part, double bytes) {
    out << fmt::format("  {:<{}}{:>12.2f}\n", part, kPartWidth, bytes / core::kGiB);
  };
  out << fmt::format("\n{:<{}}{:>12}\n", "memory per GPU", kPartWidth + 2, "GiB");
  row("weights", m.weights_bytes);
  row("gradients", m.gradients_bytes);
  row("optimizer states", m.optimizer_bytes);
  row("activations", m.activations_bytes);
  row("buffers", m.buffers_bytes);
  out << fmt::format("  {:-<{}}\n", "", kPartWidth + 12);
  out << fmt::format("  {:<{}}{:>12.2f} of {:.2f} GiB, fits: {}\n", "peak", kPartWidth,
                     m.peak_bytes_per_gpu / core::kGiB, m.capacity_bytes_per_gpu / core::kGiB,
                     m.fits ? "yes" : "no");
}

}  // namespace

void write_text(std::ostream& out, const results::Result& result) {
  if (result.scenario.layer_model) {
    write_layer_model_text(out, result.scenario);
  } else {
    write_setup(out, result.scenario);
  }
  const bool ok = result.status == results::Status::ok;
  line(out, "status",
       ok ? std::string("ok") : fmt::format("{}: {}", results::to_string(result.status), result.reason));
  if (ok) write_performance(out, result);
  if (ok) write_breakdown(out, result);
  if (ok) write_data_parallel_text(out, result);
  if (result.embeddings && result.memory.peak_bytes_per_gpu > 0.0) {
    out << '\n';
    write_embeddings_text(out, *result.embeddings);
  }
  if (ok && result.input)
    write_input_text(out, *result.input, result.input_sizing ? &*result.input_sizing : nullptr,
                     result.iteration_time_s);
  if (ok && result.goodput)
    write_goodput_text(out, *result.scenario.failures, *result.goodput, result.scenario.gpu_count());
  // A plan refused before the memory model or the engine ran (indivisible, too large) has neither.
  if (result.memory.peak_bytes_per_gpu > 0.0) write_memory(out, result.memory);
  if (result.engine.events == 0 && !ok) return;
  out << '\n';
  line(out, "engine",
       fmt::format("{} events, {} tasks, simulated ranks {}, wall {:.3g} s", result.engine.events,
                   result.engine.tasks, result.engine.simulated_ranks, result.engine.wall_s));
}

// One record in the chosen format. CSV of one record is its header and one row.
void write_result(std::ostream& out, const results::Result& result, Format format,
                  const nlohmann::ordered_json& inputs) {
  switch (format) {
    case Format::text:
      write_text(out, result);
      return;
    case Format::json:
      write_json(out, result, inputs);
      return;
    case Format::csv:
      write_csv_header(out);
      write_csv_row(out, result);
      return;
  }
}

}  // namespace dtsim::reports
