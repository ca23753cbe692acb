// The input pipeline (scenario key "input"; docs/input-pipeline.md): where each iteration's samples
// come from and what reading and preprocessing them costs. models/input/ turns it into the time to
// supply one global batch; this file is the typed form only.
//
// A sample is read from storage (sample_bytes, a cache_hit fraction of them served from a local cache)
// and preprocessed (decoded, augmented, tokenized: preprocess_core_s per sample on one CPU core), either
// on the trainers' hosts by data-loader workers beside each GPU's training process, or on reader
// servers that send the preprocessed sample (tensor_bytes) to the trainers over the network (a
// disaggregated preprocessing service: tf.data service, Meta's DPP). Feature deduplication (dedup_factor,
// RecD: Zhao et al., MLSys 2023) divides the bytes and the preprocessing of a sample.
#pragma once

#include <cstdint>
#include <optional>

namespace dtsim::config {

// Servers that preprocess samples for the trainers (key "reader_servers").
struct ReaderServers {
  std::int64_t count = 0;
  std::int64_t cores = 0;  // CPU cores of each
  double nic_gbps = 0.0;   // each server's network bandwidth, per direction
};

struct InputPipelineSpec {
  double sample_bytes = 0.0;            // read from storage per sample, before deduplication
  double preprocess_core_s = 0.0;       // CPU core-seconds per sample, before deduplication
  // Data-loader worker processes per GPU (PyTorch DataLoader num_workers, required): 0 loads each batch
  // in the training process after the previous iteration (no prefetch); 1 or more load the next
  // batches while the GPU trains on this one, up to prefetch_factor batches per worker ahead (PyTorch's
  // default 2; torch.utils.data.DataLoader documentation).
  std::int64_t workers_per_gpu = 0;
  std::int64_t prefetch_factor = 2;
  std::optional<double> storage_gbytes_per_s;  // the job's aggregate read bandwidth; absent: not a limit
  double cache_hit = 0.0;                      // fraction of sample reads served without storage
  double dedup_factor = 1.0;                   // >= 1
  // Trainer hosts' CPU cores for preprocessing (per node); absent: the node profile's host_cpu_cores.
  std::optional<std::int64_t> host_cpu_cores;
  std::optional<ReaderServers> reader_servers;  // absent: trainer hosts preprocess
  double tensor_bytes = 0.0;                    // per preprocessed sample sent by a reader server
};

}  // namespace dtsim::config
