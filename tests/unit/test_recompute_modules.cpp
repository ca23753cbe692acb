// Selective recompute by module (training.recompute_modules, Megatron-Core --recompute-modules): what
// each module drops from a layer's kept activations and which forward kernels the backward reruns.
#include <doctest/doctest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "moe_fixture.hpp"
#include "parallel/memory_model.hpp"
#include "results/evaluate.hpp"

namespace recompute_modules_test {

// Mixtral 8x7B (h 4096, 8 experts of width 14336, top-2, SwiGLU, sequence 4096) on 32 H100, pipeline 2,
// expert 8, selective recompute of `modules` (absent: the default, the attention core).
dtsim::config::Scenario mixtral(const nlohmann::json& modules) {
  nlohmann::json training = {{"activation_recompute", "selective"}};
  if (!modules.is_null()) training["recompute_modules"] = modules;
  return dtsim::testing::h100_scenario({{"preset", "mixtral-8x7b"}},
                                       {{"pipeline", 2}, {"expert", 8}, {"distributed_optimizer", true}}, 4,
                                       32, training);
}

}  // namespace recompute_modules_test

TEST_CASE("recompute modules: the norms and the expert activation leave the kept activations") {
  // Per layer and micro-batch, no tensor parallelism (t = 1), BF16 (2 bytes): sb = 4096 tokens; the
  // norms' outputs 2 x 2 sbh; the experts' activation output 2 bytes x c x f_e with c = sb x top_k
  // (balanced) = 8192 copies, f_e = 14336 (memory_model.hpp).
  const double sb = 4096, h = 4096, copies = 2 * 4096, fe = 14336;
  const auto core = recompute_modules_test::mixtral(nullptr);
  const auto norms = recompute_modules_test::mixtral({"core_attn", "layernorm"});
  const auto all = recompute_modules_test::mixtral({"core_attn", "layernorm", "moe_act"});
  const double kept = dtsim::parallel::layer_activation_bytes(core);
  CHECK(kept - dtsim::parallel::layer_activation_bytes(norms) == doctest::Approx(4 * sb * h));
  CHECK(kept - dtsim::parallel::layer_activation_bytes(all) == doctest::Approx(4 * sb * h + 2 * copies * fe));
  // The working set while a layer's backward runs holds what was recomputed.
  CHECK(dtsim::parallel::layer_working_set_bytes(all) - dtsim::parallel::layer_working_set_bytes(core) ==
        doctest::Approx(4 * sb * h + 2 * copies * fe));
}

TEST_CASE("recompute modules: the backward reruns the modules' forward kernels, nothing else") {
  const auto core = dtsim::results::evaluate(recompute_modules_test::mixtral(nullptr), {.trace = true});
  const auto all =
      dtsim::results::evaluate(recompute_modules_test::mixtral({"layernorm", "moe_act"}), {.trace = true});
  REQUIRE_MESSAGE(core.status == dtsim::results::Status::ok, core.reason);
  REQUIRE_MESSAGE(all.status == dtsim::results::Status::ok, all.reason);
  const auto a = dtsim::testing::spans_by_kernel(core);
  const auto b = dtsim::testing::spans_by_kernel(all);
  // Per layer and micro-batch: by default the attention core runs twice (forward and rerun) and the
  // norms and the experts' activation (SwiGLU: Mixtral has no dense MLP) once; with the modules
  // layernorm and moe_act the other way round.
  CHECK(b.at("input_norm") == 2 * a.at("input_norm"));
  CHECK(b.at("mlp_norm") == 2 * a.at("mlp_norm"));
  CHECK(b.at("swiglu") == 2 * a.at("swiglu"));
  CHECK(b.at("flash_attention") * 2 == a.at("flash_attention"));
  // The same model FLOPs; more time in recompute, less memory.
  CHECK(all.flops.model_tflops_per_gpu * all.iteration_time_s ==
        doctest::Approx(core.flops.model_tflops_per_gpu * core.iteration_time_s));
  CHECK(all.memory.activations_bytes < core.memory.activations_bytes);
  MESSAGE("recompute " << core.breakdown.recompute_s << " s -> " << all.breakdown.recompute_s << " s");
}
