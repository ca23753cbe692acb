// Pipeline schedules: the order in which one stage runs the forward and backward passes of its
// micro-batches (and model chunks, for the interleaved schedule).
//   gpipe        all forwards, then all backwards (Huang et al. 2019, GPipe)
//   1f1b         warm-up of (p - s - 1) forwards, then one forward / one backward, then cool-down
//                (Narayanan et al. 2021, PipeDream-Flush; Megatron-LM forward_backward_pipelining)
//   interleaved  v model chunks per stage, micro-batches in groups of p; warm-up
//                (p - s - 1) * 2 + (v - 1) * p forward steps (Narayanan et al. SC'21, Sec. 2.2.2;
//                Megatron-LM interleaved schedule); needs micro-batches % p == 0.
//   zb-h1        zero bubble, ZB-H1 (Qi, Wan, Huang, Lin, "Zero Bubble Pipeline Parallelism", ICLR 2024,
//                arXiv 2401.10241, Sec. 3.1): the backward pass split into B, the gradient of the input
//                that the stage before waits for, and W, the weight gradients
//                (models::LayerOp::weight_grad), which wait. Stage s runs the warm-up of 1F1B
//                (p - s - 1 forwards), then s forward + B pairs whose W it defers, then forward + B + W
//                (stage 0: forward + whole backward), then B + W, then the s deferred W at the end, each W
//                for the oldest micro-batch whose W is pending: the ZeroBubbleH1Pipeline of the
//                authors' code (sail-sg/zero-bubble-pipeline-parallelism, with its exact semantics). The
//                first stage holds p micro-batches in flight, as in 1F1B; stage s > 0 holds up to p,
//                s of them waiting for their W only.
// combined     (config::ParallelismSpec::expert_comm_overlap) 1f1b without a pipeline or interleaved: one
//              more warm-up forward, then each steady forward runs together with the backward after it as
//              one combined step (PipelineStep::combined), layer by layer, so that one micro-batch's token
//              exchanges run beside the other's compute: Megatron-Core's combined 1F1B
//              (megatron/core/pipeline_parallel/combined_1f1b.py: without a pipeline, micro-batch 0's forward
//              alone, then the backward of i with the forward of i + 1, then the last backward; schedules.py
//              adds one warm-up micro-batch to the interleaved schedule under
//              --overlap-moe-expert-parallel-comm, so that each steady backward is of a micro-batch whose
//              forward is not the one beside it).
// Bubble of the resulting timeline: (p - 1)(F + B + W) for 1F1B and GPipe, (p - 1)(F + B + W) / v
// interleaved, (p - 1)(F + B - W) for zb-h1 (F, B, W: a stage's forward, input-gradient and
// weight-gradient times per micro-batch).
#pragma once

#include <cstdint>
#include <vector>

#include "config/scenario.hpp"

namespace dtsim::parallel {

// backward: the whole backward pass; input_grad and weight_grad: its two parts under zb-h1 (B and W).
enum class Pass : std::uint8_t { forward, backward, input_grad, weight_grad };

struct PipelineStep {
  Pass pass = Pass::forward;
  std::int32_t micro_batch = 0;
  std::int32_t chunk = 0;  // model chunk on this stage (0 unless interleaved)
  bool combined = false;   // a forward that runs together with the backward step after it (combined 1F1B)
};

// Layers of each model chunk (index: chunk * stages + stage, the order layers flow through). When the
// layers do not divide evenly, the first and the last chunks get the fewer layers, since they also
// hold the embedding and the output layer (the split Llama 3 used: Dubey et al. 2024, Sec. 3.3.2).
// With fewer layers than chunks, the first and the last chunk may hold none, only the embedding or
// the output layer: Megatron-Core's --account-for-embedding-in-pipeline-split and
// --account-for-loss-in-pipeline-split, which count each as a layer (94 layers on 32 stages x 3
// virtual: 0, then 1 in each of the 94 middle chunks, then 0). Requires layers >= chunks - 2 (and
// >= 1), every middle chunk holding a layer (feasibility.hpp says so otherwise).
std::vector<std::int64_t> chunk_layers(std::int64_t layers, std::int64_t stages, std::int64_t virtual_stages);

// The layers of each model chunk of `model` on `stages` x `virtual_stages` chunks: chunk_layers() with its
// multi-token prediction modules (models/transformer/mtp.hpp) counted as layers of the last chunk, which
// then holds that many layers fewer (Megatron-Core places them in the last chunk, and its pipeline layout
// gives them a layer's slot: "Et|(tt|)*30mL" for DeepSeek-V3); chunk_layers() of the layers when the last
// chunk would hold fewer layers than modules.
std::vector<std::int64_t> model_chunk_layers(const config::TransformerSpec& model, std::int64_t stages,
                                             std::int64_t virtual_stages);

// The model index of each chunk's first layer (`chunk_layers` from chunk_layers() or model_chunk_layers()):
// the layers of the chunks before it.
std::vector<std::int64_t> chunk_first_layers(const std::vector<std::int64_t>& chunk_layers);

// The layers stage `stage` holds: the sum over its chunks of chunk_layers() (`chunk_layers`, of
// `stages` x virtual stages chunks).
std::int64_t stage_layers(const std::vector<std::int64_t>& chunk_layers, std::int64_t stages,
                          std::int64_t stage);

// `combined`: the combined 1F1B form of 1f1b without a pipeline or of interleaved (above); ignored for the
// other schedules (GPipe, and 1f1b or zb-h1 with a pipeline), which parallel/feasibility.hpp refuses with it.
std::vector<PipelineStep> stage_schedule(config::Schedule schedule, std::int64_t stages, std::int64_t stage,
                                         std::int64_t micro_batches, std::int64_t virtual_stages,
                                         bool combined = false);

// The most (layer x micro-batch) activations stage `stage` holds at once under its schedule: a forward
// step adds its chunk's layers (chunk_layers, index chunk * stages + stage), a backward step frees them.
//   gpipe        m x the stage's layers
//   1f1b         min(m, p - s) x the stage's layers (the warm-up's p - s - 1 forwards and one more)
//   interleaved  the warm-up's 2 (p - s - 1) + (v - 1) p forward steps and one more, less nothing, then
//                the steady phase's most (each pair adds a forward chunk and frees a backward chunk; with
//                uneven chunks the held layers vary with a period of p v steps, all of which are
//                visited). Even chunks of l layers: (2 (p - s - 1) + (v - 1) p + 1) l, capped at m v l;
//                stage 0 gives Korthikanti et al.'s p (1 + (p - 1) / (p v)) x its layers, and the last
//                stage still holds ((v - 1) p + 1) l: every chunk's forward but the last runs first.
//   combined     one micro-batch more than the form it combines (its extra warm-up forward), and one more
//                again in the steady phase, where a forward adds its chunk while the backward beside it
//                still holds its own: 1f1b without a pipeline min(m, 2); interleaved the warm-up of
//                2 (p - s - 1) + (v - 1) p + 1 forward steps and one more (even chunks: (warm-up + 1) l,
//                capped at m v l)
//   zb-h1        min(m, p) x the stage's layers: up to p micro-batches on every stage (stage 0 as 1F1B);
//                what those waiting only for their W hold instead is memory_model.cpp's.
// zb-h1 on stage s > 0: what the stage holds at once when a micro-batch between its forward and its B
// keeps `kept` bytes and one between its B and its W keeps `w_read` (what W reads): the most over its
// schedule, from the warm-up's w0 = min(p - s - 1, m) forwards and the k = min(s, m - w0) pairs whose W
// waits. The steady phase peaks either right after a forward, (w0 + 1) kept + k w_read, or right after a
// B, w0 kept + (k + 1) w_read (k + 1 micro-batches waiting for W: the deferred ones and the newest);
// fewer micro-batches end sooner. Stage 0 runs whole backward passes: min(m, p) kept. Equal to counting
// over stage_schedule() (tests/unit/test_pipeline_schedule.cpp).
double zero_bubble_peak(std::int64_t stages, std::int64_t stage, std::int64_t micro_batches, double kept,
                        double w_read);

// Equal to the most that counting over stage_schedule() gives for gpipe, 1f1b and interleaved
// (tests/unit/test_pipeline_schedule.cpp); O(p v) per call.
double peak_in_flight_layers(config::Schedule schedule, std::int64_t stages, std::int64_t stage,
                             std::int64_t micro_batches, std::int64_t virtual_stages,
                             const std::vector<std::int64_t>& chunk_layers, bool combined = false);

}  // namespace dtsim::parallel
