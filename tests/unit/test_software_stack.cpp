// Software stacks (hardware_profiles/software/, config/scenario.hpp SoftwareStack): a stack gives its
// settings as the defaults of their scenario keys, a key the scenario writes wins, and a bad stack file
// is reported at its own file and pointer.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "config/profile_loader.hpp"
#include "config/scenario_loader.hpp"
#include "core/errors.hpp"
#include "input_error_of.hpp"

namespace {

namespace fs = std::filesystem;
using dtsim::config::AttentionKind;
using dtsim::config::PipelineComm;
using dtsim::config::Scenario;
using nlohmann::json;

// GPT-3 175B on 16 DGX A100, TP 8 x PP 4 x DP 4, naming `software`; `edit` changes it further.
Scenario load(const std::string& software, const std::function<void(json&)>& edit = {}) {
  json s = {{"schema_version", 1},
            {"name", "t"},
            {"model", {{"preset", "gpt3-175b"}}},
            {"cluster", {{"node", "dgx-a100"}, {"nodes", 16}}},
            {"parallelism", {{"tensor", 8}, {"pipeline", 4}}},
            {"training", {{"global_batch_size", 64}, {"precision", "fp16"}}}};
  if (!software.empty()) s["software"] = software;
  if (edit) edit(s);
  return dtsim::config::load_scenario_text(s.dump(), "s.json", dtsim::config::default_data_paths());
}

}  // namespace

TEST_CASE("a software stack's settings are its scenario keys' defaults - the scenario's own keys win") {
  // megatron-lm-2021.json: unfused attention, blocking pipeline transfers, blocking backward
  // tensor-parallel collectives, no userbuffers overlap, the gradient reduction after the backward pass.
  const Scenario s = load("megatron-lm-2021");
  CHECK(s.software == "megatron-lm-2021");
  CHECK(s.model.attention == AttentionKind::standard);
  CHECK(s.parallelism.pipeline_comm == PipelineComm::blocking);
  CHECK_FALSE(s.parallelism.tp_backward_overlap);
  CHECK_FALSE(s.parallelism.tp_comm_overlap);
  CHECK_FALSE(s.training.overlap_grad_reduce);
  CHECK(s.training.overlap_param_gather);  // the stack says nothing: dtsim's default

  const Scenario own = load("megatron-lm-2021", [](json& j) {
    j["model"]["attention"] = "flash";
    j["parallelism"]["pipeline_comm"] = "overlapped";
  });
  CHECK(own.model.attention == AttentionKind::flash);
  CHECK(own.parallelism.pipeline_comm == PipelineComm::overlapped);
  CHECK_FALSE(own.parallelism.tp_backward_overlap);
  CHECK_FALSE(own.training.overlap_grad_reduce);
}

TEST_CASE("a stack's ZeRO-3 applies where zero_stage is 3, under the scenario's own zero3 keys") {
  const auto zero3 = [](const json& block) {
    return [block](json& j) {
      j["parallelism"] = {{"data", 128}, {"zero_stage", 3}};
      if (!block.is_null()) j["parallelism"]["zero3"] = block;
    };
  };
  const Scenario deepspeed = load("megatron-lm-2021", zero3(nullptr));
  CHECK(deepspeed.parallelism.zero3.fetch == dtsim::config::Zero3Fetch::on_demand);
  CHECK(deepspeed.parallelism.zero3.granularity == dtsim::config::Zero3Granularity::tensor);
  CHECK(deepspeed.parallelism.zero3.buffers == dtsim::config::CollectiveBuffers::list);
  const Scenario flat = load("megatron-lm-2021", zero3(json{{"buffers", "flat"}}));
  CHECK(flat.parallelism.zero3.fetch == dtsim::config::Zero3Fetch::on_demand);
  CHECK(flat.parallelism.zero3.buffers == dtsim::config::CollectiveBuffers::flat);
  const Scenario fsdp2 = load("torchtitan-2024", zero3(nullptr));
  CHECK(fsdp2.parallelism.zero3.buffers == dtsim::config::CollectiveBuffers::per_parameter);
  CHECK(fsdp2.model.elementwise_kernels == dtsim::config::ElementwiseKernels::eager);
  // Below stage 3 the stack's ZeRO-3 is kept, unused, for the stage-3 plans a search makes of it.
  CHECK(load("megatron-lm-2021").parallelism.zero3 == deepspeed.parallelism.zero3);
  CHECK(load("megatron-core-2024").parallelism.zero3 == dtsim::config::Zero3Spec{});
}

TEST_CASE("megatron-core-2024 states dtsim's defaults") {
  for (const bool sequence_parallel : {false, true}) {
    const auto edit = [&](json& j) { j["parallelism"]["sequence_parallel"] = sequence_parallel; };
    const Scenario stack = load("megatron-core-2024", edit);
    const Scenario none = load("", edit);
    CHECK(stack.model.attention == none.model.attention);
    CHECK(stack.model.elementwise_kernels == none.model.elementwise_kernels);
    CHECK(stack.parallelism.pipeline_comm == none.parallelism.pipeline_comm);
    CHECK(stack.parallelism.tp_backward_overlap == none.parallelism.tp_backward_overlap);
    CHECK(stack.parallelism.tp_comm_overlap == none.parallelism.tp_comm_overlap);
    CHECK(stack.training.overlap_grad_reduce == none.training.overlap_grad_reduce);
    CHECK(stack.training.overlap_param_gather == none.training.overlap_param_gather);
    CHECK(stack.training.grad_accumulation == none.training.grad_accumulation);
  }
}

TEST_CASE("the Megatron-LM stacks of 2021-2023 state their kernels and gradient accumulation") {
  using dtsim::config::ElementwiseKernels;
  using dtsim::config::GradAccumulation;
  // Megatron-LM of 2021 and 2022 and Megatron-DeepSpeed run the same TorchScript- and apex-fused
  // layer; the 2021 hook adds every gradient, 2022's fuses the weights' into their GEMMs, and under
  // DeepSpeed autograd adds every gradient into .grad.
  for (const char* id : {"megatron-lm-2021", "megatron-lm-2022", "megatron-deepspeed-2023"}) {
    CAPTURE(id);
    CHECK(load(id).model.elementwise_kernels == ElementwiseKernels::scripted);
  }
  CHECK(load("megatron-lm-2021").training.grad_accumulation == GradAccumulation::unfused);
  CHECK(load("megatron-lm-2022").training.grad_accumulation == GradAccumulation::fused);
  CHECK(load("megatron-deepspeed-2023").training.grad_accumulation == GradAccumulation::unfused);
  CHECK(load("torchtitan-2024").training.grad_accumulation == GradAccumulation::none);
  // A scenario's own key wins over its stack's.
  const Scenario own =
      load("megatron-deepspeed-2023", [](json& j) { j["training"]["grad_accumulation"] = "none"; });
  CHECK(own.training.grad_accumulation == GradAccumulation::none);
}

TEST_CASE("Megatron-Core overlaps pipeline transfers only with the interleaved schedule") {
  // overlapped_if_interleaved (megatron-core-2024 and the default): Megatron-LM turns overlap_p2p_comm
  // off without virtual stages, so 1F1B blocks on its transfers. The scenario keeps the rule; the
  // schedule decides what runs.
  using dtsim::config::pipeline_comm_in_effect;
  const auto interleaved = [](json& j) {
    j["parallelism"]["virtual_stages"] = 2;
    j["parallelism"]["schedule"] = "interleaved";
  };
  const Scenario stack = load("megatron-core-2024");
  CHECK(stack.parallelism.pipeline_comm == PipelineComm::overlapped_if_interleaved);
  CHECK(pipeline_comm_in_effect(stack.parallelism) == PipelineComm::blocking);
  CHECK(pipeline_comm_in_effect(load("megatron-core-2024", interleaved).parallelism) ==
        PipelineComm::overlapped);
  CHECK(pipeline_comm_in_effect(load("").parallelism) == PipelineComm::blocking);
  CHECK(pipeline_comm_in_effect(load("", interleaved).parallelism) == PipelineComm::overlapped);
  const Scenario gpipe = load("", [](json& j) { j["parallelism"]["schedule"] = "gpipe"; });
  CHECK(pipeline_comm_in_effect(gpipe.parallelism) == PipelineComm::blocking);
  // A search changes the schedule of a loaded scenario: the rule follows it.
  dtsim::config::ParallelismSpec searched = stack.parallelism;
  searched.virtual_stages = 2;
  searched.schedule = dtsim::config::Schedule::interleaved;
  CHECK(pipeline_comm_in_effect(searched) == PipelineComm::overlapped);
  // A scenario's own key: overlapped stays overlapped with 1F1B (a framework whose 1F1B sends
  // asynchronously), and the rule applies under any stack.
  const auto key = [](const char* value) {
    return [value](json& j) { j["parallelism"]["pipeline_comm"] = value; };
  };
  CHECK(pipeline_comm_in_effect(load("megatron-core-2024", key("overlapped")).parallelism) ==
        PipelineComm::overlapped);
  CHECK(pipeline_comm_in_effect(load("megatron-lm-2021", key("overlapped_if_interleaved")).parallelism) ==
        PipelineComm::blocking);
}

TEST_CASE("a bad software stack file is reported at its own file and pointer") {
  const fs::path root = fs::temp_directory_path() / "dtsim_test_software_stack";
  fs::remove_all(root);
  fs::create_directories(root / "software");
  const auto write = [&](const json& settings) {
    const json stack = {{"schema_version", 1},
                        {"id", "bad"},
                        {"name", "bad"},
                        {"settings", settings},
                        {"sources", {{"settings", "test"}}}};
    std::ofstream(root / "software" / "bad.json") << stack.dump(2);
  };
  const auto error_of = [&] {
    return dtsim::testing::input_error_of([&] {
      dtsim::config::load_software_stack(root.string(), "bad",
                                         dtsim::config::IdLocation{"s.json", "/software"});
    });
  };
  write({{"parallelism", {{"pipeline_comm", "blok"}}}});
  dtsim::core::InputError e = error_of();
  CHECK(e.file() == (root / "software" / "bad.json").string());
  CHECK(e.pointer() == "/settings/parallelism/pipeline_comm");
  CHECK(e.message() ==
        "got \"blok\"; expected one of \"overlapped\", \"blocking\", \"overlapped_if_interleaved\"");
  write({{"parallelism", {{"tp_backward_overlap", false}}}});
  e = error_of();
  CHECK(e.pointer() == "/settings/parallelism/tp_comm_overlap");
  write({{"training", {{"activation_recompute", "full"}}}});  // not a software fact
  e = error_of();
  CHECK(e.pointer() == "/settings/training/activation_recompute");
  fs::remove_all(root);
}

TEST_CASE("a stack's \"supports\" makes the plans it cannot run infeasible, with the reason") {
  const auto plan = [](int zero_stage, std::int64_t pipeline, bool interleaved = false) {
    return [=](json& j) {
      j["parallelism"] = {{"tensor", 8}, {"pipeline", pipeline}, {"zero_stage", zero_stage}};
      if (interleaved) {
        j["parallelism"]["virtual_stages"] = 2;
        j["parallelism"]["schedule"] = "interleaved";
      }
    };
  };
  // Why the stack refuses the plan; empty when it runs it.
  const auto refusal = [](const std::string& stack, const std::function<void(json&)>& edit) {
    return dtsim::config::unsupported_by_stack(load(stack, edit)).value_or("");
  };
  const auto says = [](const std::string& why, const std::string& text) {
    return why.find(text) != std::string::npos;
  };
  // Megatron-Core r0.8: its distributed optimizer, no ZeRO stages.
  CHECK(refusal("megatron-core-2024", plan(2, 4)) ==
        "the software stack megatron-core-2024 does not run ZeRO stage 2 (its \"supports\" in "
        "hardware_profiles/software/)");
  CHECK(refusal("megatron-core-2024", plan(0, 4, true)).empty());
  // Megatron-DeepSpeed: ZeRO-2 without a pipeline, not beside one (DeepSpeed's PipelineEngine), and no
  // interleaving.
  CHECK(refusal("megatron-deepspeed-2023", plan(2, 1)).empty());
  CHECK(says(refusal("megatron-deepspeed-2023", plan(2, 4)),
             "ZeRO stage 2 with pipeline parallelism (at most stage 1 beside it)"));
  CHECK(says(refusal("megatron-deepspeed-2023", plan(1, 4, true)), "the interleaved schedule"));
  // Megatron-LM of 2021: the SC'21 paper's ZeRO-3 ran without model parallelism; no distributed optimizer.
  CHECK(refusal("megatron-lm-2021", plan(0, 4, true)).empty());
  CHECK(says(refusal("megatron-lm-2021", plan(3, 4)),
             "ZeRO stage 3 with pipeline parallelism (at most stage 0 beside it)"));
  CHECK(says(refusal("megatron-lm-2021", plan(1, 1)), "ZeRO stage 1"));
  CHECK(refusal("megatron-lm-2022", plan(0, 4, true)).empty());
  // torchtitan of 2024: FSDP2 beside a pipeline keeps parameters gathered (stage 2 at most), and DDP
  // replicas only on a one-dimensional mesh (TP 8 x PP 4 leaves data 4 here).
  CHECK(refusal("torchtitan-2024", plan(2, 4, true)).empty());
  CHECK(says(refusal("torchtitan-2024", plan(3, 4)), "at most stage 2 beside it"));
  CHECK(says(refusal("torchtitan-2024", plan(0, 1)),
             "unsharded data parallelism (ZeRO stage 0) beside tensor, context or pipeline parallelism"));
  CHECK(refusal("torchtitan-2024", [](json& j) {
          j["parallelism"] = {{"data", 128}, {"zero_stage", 0}};  // DDP alone
        }).empty());
  // Hugging Face transformers: ZeRO through DeepSpeed or FSDP, no pipeline schedule.
  CHECK(refusal("hf-transformers-2025", plan(3, 1)).empty());
  CHECK(says(refusal("hf-transformers-2025", plan(0, 4)), "does not run pipeline parallelism"));
  // No stack at all is not checked.
  CHECK(refusal("", plan(3, 4)).empty());
}

TEST_CASE("a bad \"supports\" block is reported at its pointer") {
  const fs::path root = fs::temp_directory_path() / "dtsim_test_software_support";
  fs::remove_all(root);
  fs::create_directories(root / "software");
  const auto error_for = [&](const json& supports) {
    const json stack = {{"schema_version", 1},
                        {"id", "bad"},
                        {"name", "bad"},
                        {"settings", json::object()},
                        {"supports", supports},
                        {"sources", {{"settings", "test"}, {"supports", "test"}}}};
    std::ofstream(root / "software" / "bad.json") << stack.dump(2);
    return dtsim::testing::input_error_of([&] {
      dtsim::config::load_software_stack(root.string(), "bad", dtsim::config::IdLocation{"s.json", "/software"});
    });
  };
  const json good = {
      {"zero_stages", {0, 1}},    {"distributed_optimizer", true}, {"max_zero_stage_with_pipeline", 1},
      {"context_parallel", true}, {"interleaved_schedule", true},  {"expert_comm_overlap", false}};
  json bad = good;
  bad["zero_stages"] = {0, 4};
  dtsim::core::InputError e = error_for(bad);
  CHECK(e.pointer() == "/supports/zero_stages");
  CHECK(e.message() == "got 4; expected stages among 0, 1, 2 and 3");
  bad = good;
  bad.erase("context_parallel");
  e = error_for(bad);
  CHECK(e.pointer() == "/supports/context_parallel");
  bad = good;
  bad["pipeline_parallel"] = "no";
  e = error_for(bad);
  CHECK(e.pointer() == "/supports/pipeline_parallel");
  bad = good;
  bad["expert_comm_overlap"] = 1;
  e = error_for(bad);
  CHECK(e.pointer() == "/supports/expert_comm_overlap");
  fs::remove_all(root);
}

TEST_CASE(
    "nemo-automodel-2025 keeps BF16 parameters without an FP32 copy, unless the scenario runs autocast") {
  // The stack's "master_weights": false (BF16 parameters and Adam moments) is the default of the key;
  // under autocast the FP32 parameters are the optimizer's, so the stack's value does not apply there.
  const auto bf16 = [](json& j) {
    j["training"]["precision"] = "bf16";
    j["parallelism"] = {{"tensor", 8}, {"pipeline", 2}, {"zero_stage", 1}};
  };
  CHECK_FALSE(load("nemo-automodel-2025", bf16).training.master_weights);
  const Scenario autocast = load("nemo-automodel-2025", [&](json& j) {
    bf16(j);
    j["training"]["autocast"] = true;
  });
  CHECK(autocast.training.master_weights);
  CHECK(load("torchtitan-2024").training.master_weights);  // the stack says nothing: dtsim's default
}
