// Spellings of the scenario and profile enumerations: the names used in the JSON files (scenario v1,
// hardware_profiles/README.md) and in every report.
#include "config/scenario.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/errors.hpp"

namespace dtsim::config {

const char* to_string(Precision p) {
  switch (p) {
    case Precision::fp32:
      return "fp32";
    case Precision::tf32:
      return "tf32";
    case Precision::fp16:
      return "fp16";
    case Precision::bf16:
      return "bf16";
    case Precision::fp8:
      return "fp8";
  }
  throw core::InternalError("to_string: invalid Precision value");
}

const char* to_string(MlpKind m) {
  switch (m) {
    case MlpKind::gelu:
      return "gelu";
    case MlpKind::swiglu:
      return "swiglu";
  }
  throw core::InternalError("to_string: invalid MlpKind value");
}

const char* to_string(AttentionKind a) {
  switch (a) {
    case AttentionKind::standard:
      return "standard";
    case AttentionKind::flash:
      return "flash";
  }
  throw core::InternalError("to_string: invalid AttentionKind value");
}

const char* to_string(ElementwiseKernels k) {
  switch (k) {
    case ElementwiseKernels::fused:
      return "fused";
    case ElementwiseKernels::scripted:
      return "scripted";
    case ElementwiseKernels::eager:
      return "eager";
    case ElementwiseKernels::hf_eager:
      return "hf_eager";
  }
  throw core::InternalError("to_string: invalid ElementwiseKernels value");
}

const char* to_string(Fp8Recipe r) {
  switch (r) {
    case Fp8Recipe::delayed:
      return "delayed";
    case Fp8Recipe::tensorwise:
      return "tensorwise";
  }
  return "?";
}

const char* to_string(GradAccumulation g) {
  switch (g) {
    case GradAccumulation::fused:
      return "fused";
    case GradAccumulation::unfused:
      return "unfused";
    case GradAccumulation::none:
      return "none";
  }
  throw core::InternalError("to_string: invalid GradAccumulation value");
}

const char* to_string(MoeDispatcher d) {
  switch (d) {
    case MoeDispatcher::all_to_all:
      return "all_to_all";
    case MoeDispatcher::deepep:
      return "deepep";
  }
  throw core::InternalError("to_string: invalid MoeDispatcher value");
}

const char* to_string(MoeRouting r) {
  switch (r) {
    case MoeRouting::uniform:
      return "uniform";
    case MoeRouting::round_robin:
      return "round_robin";
  }
  throw core::InternalError("to_string: invalid MoeRouting value");
}

const char* to_string(Schedule s) {
  switch (s) {
    case Schedule::one_f_one_b:
      return "1f1b";
    case Schedule::gpipe:
      return "gpipe";
    case Schedule::interleaved:
      return "interleaved";
    case Schedule::zero_bubble_h1:
      return "zb-h1";
  }
  throw core::InternalError("to_string: invalid Schedule value");
}

const char* to_string(Recompute r) {
  switch (r) {
    case Recompute::none:
      return "none";
    case Recompute::selective:
      return "selective";
    case Recompute::full:
      return "full";
  }
  throw core::InternalError("to_string: invalid Recompute value");
}

const char* to_string(NetworkFidelity n) {
  switch (n) {
    case NetworkFidelity::analytic:
      return "analytic";
    case NetworkFidelity::flow:
      return "flow";
    case NetworkFidelity::packet:
      return "packet";
  }
  throw core::InternalError("to_string: invalid NetworkFidelity value");
}

const char* to_string(RankMode r) {
  switch (r) {
    case RankMode::symmetric:
      return "symmetric";
    case RankMode::all:
      return "all";
  }
  throw core::InternalError("to_string: invalid RankMode value");
}

const char* to_string(TopologyKind t) {
  switch (t) {
    case TopologyKind::fat_tree:
      return "fat-tree";
    case TopologyKind::rail_optimized:
      return "rail-optimized";
  }
  throw core::InternalError("to_string: invalid TopologyKind value");
}

const char* to_string(Optimizer o) {
  switch (o) {
    case Optimizer::adam:
      return "adam";
    case Optimizer::sgd:
      return "sgd";
    case Optimizer::adagrad:
      return "adagrad";
  }
  throw core::InternalError("to_string: invalid Optimizer value");
}

const char* to_string(ModelKind k) {
  switch (k) {
    case ModelKind::transformer:
      return "transformer";
    case ModelKind::mlp:
      return "mlp";
  }
  throw core::InternalError("to_string: invalid ModelKind value");
}

const char* to_string(IntraNodeKind k) {
  switch (k) {
    case IntraNodeKind::nvswitch:
      return "nvswitch";
    case IntraNodeKind::nvlink:
      return "nvlink";
    case IntraNodeKind::pcie:
      return "pcie";
    case IntraNodeKind::shared_memory:
      return "shared_memory";
  }
  throw core::InternalError("to_string: invalid IntraNodeKind value");
}

const char* to_string(AllReduceAlgorithm a) {
  switch (a) {
    case AllReduceAlgorithm::automatic:
      return "auto";
    case AllReduceAlgorithm::ring:
      return "ring";
    case AllReduceAlgorithm::tree:
      return "tree";
    case AllReduceAlgorithm::hierarchical:
      return "hierarchical";
    case AllReduceAlgorithm::nvls:
      return "nvls";
    case AllReduceAlgorithm::halving_doubling:
      return "halving_doubling";
  }
  throw core::InternalError("to_string: invalid AllReduceAlgorithm value");
}

const char* to_string(CollectiveProtocol p) {
  switch (p) {
    case CollectiveProtocol::automatic:
      return "auto";
    case CollectiveProtocol::ll:
      return "ll";
    case CollectiveProtocol::ll128:
      return "ll128";
    case CollectiveProtocol::simple:
      return "simple";
  }
  throw core::InternalError("to_string: invalid CollectiveProtocol value");
}

const char* to_string(PipelineComm c) {
  switch (c) {
    case PipelineComm::overlapped:
      return "overlapped";
    case PipelineComm::blocking:
      return "blocking";
    case PipelineComm::overlapped_if_interleaved:
      return "overlapped_if_interleaved";
  }
  throw core::InternalError("to_string: invalid PipelineComm value");
}

PipelineComm pipeline_comm_in_effect(const ParallelismSpec& p) {
  if (p.pipeline_comm != PipelineComm::overlapped_if_interleaved) return p.pipeline_comm;
  return p.schedule == Schedule::interleaved ? PipelineComm::overlapped : PipelineComm::blocking;
}

bool tp_comm_overlap_in_effect(const ParallelismSpec& p) {
  return p.tp_comm_overlap && p.sequence_parallel && p.tensor > 1 && p.tp_backward_overlap;
}

const char* to_string(Zero3Fetch f) {
  switch (f) {
    case Zero3Fetch::prefetch:
      return "prefetch";
    case Zero3Fetch::on_demand:
      return "on_demand";
  }
  throw core::InternalError("to_string: invalid Zero3Fetch value");
}

const char* to_string(Zero3Granularity g) {
  switch (g) {
    case Zero3Granularity::layer:
      return "layer";
    case Zero3Granularity::tensor:
      return "tensor";
  }
  throw core::InternalError("to_string: invalid Zero3Granularity value");
}

const char* to_string(CollectiveBuffers b) {
  switch (b) {
    case CollectiveBuffers::flat:
      return "flat";
    case CollectiveBuffers::per_parameter:
      return "per_parameter";
    case CollectiveBuffers::list:
      return "list";
  }
  throw core::InternalError("to_string: invalid CollectiveBuffers value");
}

const char* to_string(MeshDim d) {
  switch (d) {
    case MeshDim::tensor:
      return "tp";
    case MeshDim::context:
      return "cp";
    case MeshDim::data:
      return "dp";
    case MeshDim::pipeline:
      return "pp";
  }
  throw core::InternalError("to_string: invalid MeshDim value");
}

std::vector<const char*> recompute_module_names(const RecomputeModules& m) {
  std::vector<const char*> out;
  if (m.core_attn) out.push_back("core_attn");
  if (m.layernorm) out.push_back("layernorm");
  if (m.moe_act) out.push_back("moe_act");
  if (m.mla_up_proj) out.push_back("mla_up_proj");
  return out;
}

std::string recompute_label(const TrainingSpec& t) {
  if (t.activation_recompute != Recompute::selective || t.recompute_modules == RecomputeModules{})
    return to_string(t.activation_recompute);
  return fmt::format("selective ({})", fmt::join(recompute_module_names(t.recompute_modules), ", "));
}

std::string zero3_label(const ParallelismSpec& p) {
  const Zero3Spec defaults;
  const Zero3Spec& z = p.zero3;
  const bool threshold =
      z.granularity == Zero3Granularity::tensor && z.persistence_threshold != defaults.persistence_threshold;
  if (p.zero_stage != 3 || (z.fetch == defaults.fetch && z.granularity == defaults.granularity &&
                            z.buffers == defaults.buffers && !threshold))
    return "";
  std::string label =
      std::string(to_string(z.fetch)) + "/" + to_string(z.granularity) + "/" + to_string(z.buffers);
  if (threshold) label += fmt::format(" (persistence {:g})", z.persistence_threshold);
  return label;
}

std::string zero_stage_label(const ParallelismSpec& p) {
  const std::string z = zero3_label(p);
  return z.empty() ? std::to_string(p.zero_stage) : fmt::format("{} ({})", p.zero_stage, z);
}

std::string to_string(const MeshOrder& order) {
  std::string out;
  for (const MeshDim d : order) {
    if (!out.empty()) out += '-';
    out += to_string(d);
  }
  return out;
}

}  // namespace dtsim::config
