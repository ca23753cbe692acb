#include <optional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "config/parallelism_loader.hpp"
#include "config/profile_files.hpp"
#include "config/profile_loader.hpp"

namespace dtsim::config {

SoftwareStack load_software_stack(const std::string& hardware_profiles, const std::string& id,
                                  const IdLocation& where) {
  const detail::ProfileFile file =
      detail::open_profile(hardware_profiles, "software", id, "software stacks", where);
  const std::string& path = file.path;
  ObjectReader r(file.doc, path, "");
  r.expect_keys({"schema_version", "id", "name", "sources", "settings", "supports"});
  SoftwareStack stack;
  stack.id = id;
  stack.name = detail::read_header(r, id);
  ObjectReader settings = r.child("settings");
  settings.expect_keys({"model", "parallelism", "training"});
  if (std::optional<ObjectReader> m = settings.optional_child("model")) {
    m->expect_keys({"attention", "elementwise_kernels", "vocab_padding"});
    stack.attention = m->maybe_enum<AttentionKind>("attention", named_choices(kAttentionKinds));
    stack.elementwise_kernels =
        m->maybe_enum<ElementwiseKernels>("elementwise_kernels", named_choices(kElementwiseKernels));
    stack.vocab_padding = m->maybe<std::int64_t>("vocab_padding", IntRule::between(1, kMaxVocabPadding));
    m->finish();
  }
  if (std::optional<ObjectReader> p = settings.optional_child("parallelism")) {
    p->expect_keys({"pipeline_comm", "tp_backward_overlap", "tp_comm_overlap", "zero3"});
    stack.pipeline_comm = p->maybe_enum<PipelineComm>("pipeline_comm", named_choices(kPipelineComms));
    stack.tp_backward_overlap = p->maybe<bool>("tp_backward_overlap");
    stack.tp_comm_overlap = p->maybe<bool>("tp_comm_overlap");
    if (stack.tp_backward_overlap == false && stack.tp_comm_overlap != false) {
      throw p->mismatch("tp_comm_overlap",
                        "false with \"tp_backward_overlap\": false (the userbuffers overlap runs the "
                        "backward collectives beside their GEMMs)");
    }
    if (std::optional<ObjectReader> z = p->optional_child("zero3")) stack.zero3 = read_zero3(*z, Zero3Spec{});
    p->finish();
  }
  if (std::optional<ObjectReader> t = settings.optional_child("training")) {
    t->expect_keys({"overlap_grad_reduce", "overlap_param_gather", "host_issue_us_per_kernel",
                    "host_issue_us_per_tensor_op", "host_checkpoint_us", "host_sync_before_optimizer",
                    "grad_accumulation", "autocast", "master_weights", "fp8_recipe"});
    stack.overlap_grad_reduce = t->maybe<bool>("overlap_grad_reduce");
    stack.overlap_param_gather = t->maybe<bool>("overlap_param_gather");
    stack.host_issue_us_per_kernel =
        t->maybe<double>("host_issue_us_per_kernel", NumberRule::between(0.0, kMaxHostIssueUsPerKernel));
    stack.host_issue_us_per_tensor_op =
        t->maybe<double>("host_issue_us_per_tensor_op", NumberRule::between(0.0, kMaxHostIssueUsPerKernel));
    stack.host_checkpoint_us =
        t->maybe<double>("host_checkpoint_us", NumberRule::between(0.0, kMaxHostIssueUsPerKernel));
    stack.host_sync_before_optimizer = t->maybe<bool>("host_sync_before_optimizer");
    stack.grad_accumulation =
        t->maybe_enum<GradAccumulation>("grad_accumulation", named_choices(kGradAccumulations));
    stack.autocast = t->maybe<bool>("autocast");
    stack.master_weights = t->maybe<bool>("master_weights");
    stack.fp8_recipe = t->maybe_enum<Fp8Recipe>("fp8_recipe", named_choices(kFp8Recipes));
    t->finish();
  }
  settings.finish();
  if (std::optional<ObjectReader> s = r.optional_child("supports")) {
    s->expect_keys({"zero_stages", "distributed_optimizer", "max_zero_stage_with_pipeline",
                    "context_parallel", "interleaved_schedule", "zero_bubble_schedule", "pipeline_parallel",
                    "unsharded_data_parallel_with_model_parallel", "expert_comm_overlap"});
    StackSupport can;
    const nlohmann::json* stages = s->find("zero_stages");
    if (stages == nullptr || !stages->is_array() || stages->empty()) {
      throw s->error_at("zero_stages", "expected a non-empty array of the ZeRO stages (0-3) the framework runs");
    }
    can.zero_stages = {false, false, false, false};
    for (const nlohmann::json& stage : *stages) {
      if (!stage.is_number_integer() || stage.get<int>() < 0 || stage.get<int>() > 3) {
        throw s->error_at("zero_stages", fmt::format("got {}; expected stages among 0, 1, 2 and 3", stage.dump()));
      }
      can.zero_stages[stage.get<std::size_t>()] = true;
    }
    can.distributed_optimizer = s->required<bool>("distributed_optimizer");
    can.max_zero_stage_with_pipeline = s->required<int>("max_zero_stage_with_pipeline", IntRule::between(0, 3));
    can.context_parallel = s->required<bool>("context_parallel");
    can.interleaved_schedule = s->required<bool>("interleaved_schedule");
    // Optional, so stacks written before they existed keep loading: absent means supported.
    can.pipeline_parallel = s->maybe<bool>("pipeline_parallel").value_or(true);
    can.zero_bubble_schedule = s->maybe<bool>("zero_bubble_schedule").value_or(true);
    can.unsharded_data_parallel_with_model_parallel =
        s->maybe<bool>("unsharded_data_parallel_with_model_parallel").value_or(true);
    can.expert_comm_overlap = s->maybe<bool>("expert_comm_overlap").value_or(true);
    s->finish();
    stack.support = can;
  }
  detail::check_sources(r);
  r.finish();
  return stack;
}

}  // namespace dtsim::config
