// lower_dlrm(): one training iteration of a DLRM (config/dlrm.hpp) as the task graph of every GPU
// (docs/dlrm.md). Each GPU runs the same dense program on its b samples, but its embedding shards
// differ (embedding_shards.hpp), so every rank is simulated; each exchange is one gang task over its
// members' embedding streams, which waits for the slowest member: a GPU with more lookups holds up the
// others (they show idle, as "pipeline_bubble", the time spent waiting on peers).
//
// Per GPU, as torchrec's DistributedModelParallel with TrainPipelineSparseDist runs it:
//   compute stream    bottom MLP forward, the embedding lookups (one fused kernel), the interaction and
//                     top MLP forward and the loss, top MLP and interaction backward, bottom MLP backward,
//                     the embeddings' backward with their optimizer fused (after their gradients have
//                     arrived), then the dense optimizer step (after the dense gradients' all-reduces)
//   embedding stream  with remote tables, the pull of the rows its samples use (the next batch's when
//                     pipelined, else this batch's, before the lookups); the next batch's ids to the tables' GPUs (pipelined: nothing of this iteration
//                     waits for it; not pipelined: the lookups wait for this batch's), then forward the
//                     table-row-wise reduce-scatters inside each node, the pooled values' all-to-all to
//                     the samples' GPUs and the row-wise reduce-scatter (the interaction waits for them),
//                     backward the same in reverse (all-to-all of the pooled gradients, all-gathers; they
//                     wait for every GPU's interaction backward, and the embeddings' backward for them),
//                     and with remote tables the push of the pulled rows' gradients after that backward
//   data stream       all-reduce of the top MLP's gradients after its backward, of the interaction's
//                     (DCN-v2) and of the bottom MLP's after theirs, of the data-parallel tables' after the
//                     embeddings' backward (PyTorch DDP's buckets, one per part); FP32 gradients
// Dense parameters are FP32 (4 bytes), with the optimizer's states (adam 2, adagrad 1, sgd 0 per
// parameter); the optimizer step reads and writes the parameters and states and reads the gradients.
#pragma once

#include "config/scenario.hpp"
#include "parallel/embedding_shards.hpp"
#include "parallel/lower.hpp"

namespace dtsim::parallel {

// Requires a DLRM scenario whose layout is feasible (layout.infeasible empty).
LoweredGraph lower_dlrm(const config::Scenario& scenario, const EmbeddingLayout& layout);


}  // namespace dtsim::parallel
