#include "config/input_pipeline_loader.hpp"

#include <fmt/format.h>

#include "core/errors.hpp"

namespace dtsim::config {

namespace input_loader {

// Data-loader workers per GPU, and batches each prefetches, beyond these are a typo, not a plan (a node
// has a few hundred cores).
constexpr std::int64_t kMaxWorkersPerGpu = 1024;
constexpr std::int64_t kMaxPrefetchFactor = 1024;

ReaderServers read_reader_servers(ObjectReader& r) {
  r.expect_keys({"count", "cores", "nic_gbps"});
  ReaderServers out;
  out.count = r.required<std::int64_t>("count", IntRule::positive());
  out.cores = r.required<std::int64_t>("cores", IntRule::positive());
  out.nic_gbps = r.required<double>("nic_gbps", NumberRule::positive());
  r.finish();
  return out;
}

}  // namespace input_loader

std::optional<InputPipelineSpec> read_input(ObjectReader& top, const Scenario& scenario) {
  std::optional<ObjectReader> r = top.optional_child("input");
  if (!r) return std::nullopt;
  r->expect_keys({"sample_bytes", "preprocess_core_s", "workers_per_gpu", "prefetch_factor",
                  "storage_gbytes_per_s", "cache_hit", "dedup_factor", "host_cpu_cores", "reader_servers",
                  "tensor_bytes"});
  InputPipelineSpec in;
  in.sample_bytes = r->required<double>("sample_bytes", NumberRule::positive());
  in.preprocess_core_s = r->optional<double>("preprocess_core_s", 0.0, NumberRule::non_negative());
  in.workers_per_gpu =
      r->required<std::int64_t>("workers_per_gpu", IntRule::between(0, input_loader::kMaxWorkersPerGpu));
  if (r->has("prefetch_factor") && in.workers_per_gpu == 0) {
    throw r->error_at("prefetch_factor",
                      "prefetch_factor needs workers: with workers_per_gpu 0 the training process loads each "
                      "batch itself and nothing is prefetched (PyTorch's DataLoader refuses the pair too)");
  }
  in.prefetch_factor =
      r->optional<std::int64_t>("prefetch_factor", 2, IntRule::between(1, input_loader::kMaxPrefetchFactor));
  in.storage_gbytes_per_s = r->maybe<double>("storage_gbytes_per_s", NumberRule::positive());
  in.cache_hit = r->optional<double>("cache_hit", 0.0, NumberRule::between(0.0, 1.0));
  in.dedup_factor = r->optional<double>("dedup_factor", 1.0, NumberRule::at_least(1.0));
  in.host_cpu_cores = r->maybe<std::int64_t>("host_cpu_cores", IntRule::positive());
  if (std::optional<ObjectReader> servers = r->optional_child("reader_servers")) {
    in.reader_servers = input_loader::read_reader_servers(*servers);
    if (in.host_cpu_cores) {
      throw r->error_at("host_cpu_cores",
                        "reader servers preprocess the samples: the trainer hosts' cores are not used; give "
                        "reader_servers.cores instead");
    }
    if (!r->has("tensor_bytes")) {
      throw r->error_here(
          "reader servers send each preprocessed sample to a trainer: give tensor_bytes, its size in bytes");
    }
    in.tensor_bytes = r->required<double>("tensor_bytes", NumberRule::positive());
  } else if (r->has("tensor_bytes")) {
    throw r->error_at("tensor_bytes",
                      "tensor_bytes is what reader servers send to the trainers; without reader_servers the "
                      "trainer hosts preprocess their own samples");
  }
  if (!in.reader_servers && in.preprocess_core_s > 0.0 && !in.host_cpu_cores && !scenario.node.host_cpu_cores) {
    throw r->error_at("preprocess_core_s",
                      fmt::format("the trainer hosts preprocess, but node profile \"{}\" states no host_cpu_cores: "
                                  "give input.host_cpu_cores, the CPU cores of one node",
                                  scenario.node.id));
  }
  r->finish();
  return in;
}

}  // namespace dtsim::config
