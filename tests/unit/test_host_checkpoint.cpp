// A checkpointed layer's host cost (training.host_checkpoint_us, parallel/layer_ops.cpp): each layer's
// recompute, in each micro-batch, makes the host spend that much more before its first recomputed
// kernel; where the host sets the pace, the iteration grows by exactly layers x micro-batches x cost.
#include <doctest/doctest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "config/scenario_loader.hpp"
#include "results/evaluate.hpp"

namespace host_checkpoint_test {

// A tiny GPT on one GPU of a DGX H100 (kernels of a few us, issued 40 us apart: the host sets the
// pace), 4 layers, 2 micro-batches per iteration.
dtsim::results::Result run(const std::string& recompute, double checkpoint_us) {
  nlohmann::json training = {{"global_batch_size", 2},
                             {"micro_batch_size", 1},
                             {"precision", "bf16"},
                             {"activation_recompute", recompute}};
  if (checkpoint_us >= 0.0) training["host_checkpoint_us"] = checkpoint_us;
  const nlohmann::json s = {{"schema_version", 1},
                            {"name", "tiny"},
                            {"model",
                             {{"kind", "transformer"},
                              {"layers", 4},
                              {"hidden_size", 64},
                              {"heads", 2},
                              {"seq_length", 64},
                              {"vocab_size", 128}}},
                            {"cluster", {{"node", "dgx-h100"}, {"nodes", 1}, {"gpus", 1}}},
                            {"parallelism", {{"data", 1}}},
                            {"training", training}};
  const auto scenario =
      dtsim::config::load_scenario_text(s.dump(), "tiny.json", dtsim::config::default_data_paths());
  return dtsim::results::evaluate(scenario, {});
}

}  // namespace host_checkpoint_test

TEST_CASE("each checkpointed layer and micro-batch costs the host host_checkpoint_us") {
  using host_checkpoint_test::run;
  for (const std::string recompute : {"full", "selective"}) {
    CAPTURE(recompute);
    const double base = run(recompute, -1.0).iteration_time_s;  // the default: not charged
    CHECK(run(recompute, 0.0).iteration_time_s == base);
    // 4 layers x 2 micro-batches x 1,000 us = 8 ms more, all of it waiting for the host.
    const auto charged = run(recompute, 1000.0);
    CHECK(charged.iteration_time_s == doctest::Approx(base + 8e-3).epsilon(1e-9));
    CHECK(charged.breakdown.host_wait_s == doctest::Approx(run(recompute, 0.0).breakdown.host_wait_s + 8e-3));
  }
  // Without recompute nothing is checkpointed.
  CHECK(run("none", 1000.0).iteration_time_s == run("none", 0.0).iteration_time_s);
}
