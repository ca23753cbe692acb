#include "calibration/kernel_table.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <limits>
#include <map>
#include <optional>
#include <tuple>
#include <unordered_map>

#include "core/errors.hpp"

namespace dtsim::calibration {

namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

bool has_any(const std::string& s, std::initializer_list<const char*> words) {
  return std::any_of(words.begin(), words.end(),
                     [&](const char* w) { return s.find(w) != std::string::npos; });
}

std::optional<config::Precision> precision_of(const std::string& type) {
  if (type == "float") return config::Precision::fp32;
  if (type == "c10::Half") return config::Precision::fp16;
  if (type == "c10::BFloat16") return config::Precision::bf16;
  if (type.rfind("c10::Float8", 0) == 0) return config::Precision::fp8;
  return std::nullopt;
}

struct Shape {
  std::int64_t batch = 1;
  std::int64_t m = 0;
  std::int64_t n = 0;
  std::int64_t k = 0;
};

// The GEMM an op ran, from its input dimensions; nothing when they do not describe one with every
// dimension from 1 to 2^31 - 1 (cuBLAS takes 32-bit sizes; an empty tensor's GEMM runs no math; a
// corrupt trace may hold anything).
std::optional<Shape> gemm_shape(const config::KinetoCpuOp& op) {
  const auto& d = op.input_dims;
  const auto two = [](const std::vector<std::int64_t>& v) { return v.size() == 2; };
  std::optional<Shape> shape;
  if (op.name == "aten::mm" && d.size() >= 2 && two(d[0]) && two(d[1]) && d[0][1] == d[1][0])
    shape = Shape{1, d[0][0], d[1][1], d[0][1]};
  if (op.name == "aten::addmm" && d.size() >= 3 && two(d[1]) && two(d[2]) && d[1][1] == d[2][0])
    shape = Shape{1, d[1][0], d[2][1], d[1][1]};
  if (op.name == "aten::bmm" && d.size() >= 2 && d[0].size() == 3 && d[1].size() == 3 && d[0][2] == d[1][1] &&
      d[0][0] == d[1][0])
    shape = Shape{d[0][0], d[0][1], d[1][2], d[0][2]};
  const auto in_range = [](std::int64_t v) {
    return v >= 1 && v <= std::numeric_limits<std::int32_t>::max();
  };
  if (shape && !(in_range(shape->batch) && in_range(shape->m) && in_range(shape->n) && in_range(shape->k)))
    return std::nullopt;
  return shape;
}

}  // namespace

const char* to_string(OperatorClass c) {
  switch (c) {
    case OperatorClass::gemm:
      return "gemm";
    case OperatorClass::attention:
      return "attention";
    case OperatorClass::nccl:
      return "nccl";
    case OperatorClass::normalization:
      return "normalization";
    case OperatorClass::elementwise:
      return "elementwise";
    case OperatorClass::memory_copy:
      return "memory_copy";
    case OperatorClass::other:
      return "other";
  }
  throw core::InternalError("to_string: invalid OperatorClass value");
}

OperatorClass classify_kernel(const std::string& name, config::GpuActivity activity) {
  if (activity != config::GpuActivity::kernel) return OperatorClass::memory_copy;
  const std::string n = lower(name);
  if (has_any(n, {"nccl"})) return OperatorClass::nccl;
  if (has_any(n, {"flash", "fmha", "attention", "sdpa"})) return OperatorClass::attention;
  if (has_any(n, {"gemm", "nvjet", "cutlass", "xmma", "cublas"})) return OperatorClass::gemm;
  if (has_any(n, {"norm", "softmax", "reduce"})) return OperatorClass::normalization;
  if (has_any(n, {"elementwise", "copy", "fill", "cat", "index"})) return OperatorClass::elementwise;
  return OperatorClass::other;
}

KernelTable kernel_table(const config::KinetoTrace& trace) {
  KernelTable t;
  t.file = trace.file;
  std::array<ClassRow, kOperatorClasses> classes{};
  std::map<std::string, std::pair<OperatorClass, std::vector<double>>> by_name;
  std::unordered_map<std::int64_t, double> gemm_us_by_op;
  for (const auto& g : trace.gpu) {
    const OperatorClass cls = classify_kernel(g.name, g.activity);
    auto& row = classes[static_cast<std::size_t>(cls)];
    row.cls = cls;
    ++row.kernels;
    row.total_us += g.duration_us;
    t.total_us += g.duration_us;
    auto& entry = by_name[g.name];
    entry.first = cls;
    entry.second.push_back(g.duration_us);
    if (cls == OperatorClass::gemm) {
      if (g.external_id) {
        gemm_us_by_op[*g.external_id] += g.duration_us;
      } else {
        ++t.gemm_ops_without_shape;
      }
    }
  }
  for (auto& c : classes) {
    if (c.kernels == 0) continue;
    c.share = t.total_us > 0.0 ? c.total_us / t.total_us : 0.0;
    t.classes.push_back(c);
  }
  for (auto& [name, entry] : by_name) {
    KernelRow row;
    row.name = name;
    row.cls = entry.first;
    for (double us : entry.second) row.total_us += us;
    row.duration_us = sample_stats(entry.second);
    t.kernels.push_back(row);
  }
  std::stable_sort(t.kernels.begin(), t.kernels.end(),
                   [](const KernelRow& a, const KernelRow& b) { return a.total_us > b.total_us; });

  std::map<std::tuple<int, std::int64_t, std::int64_t, std::int64_t>, std::vector<double>> gemms;
  for (const auto& op : trace.cpu_ops) {
    const auto it = gemm_us_by_op.find(op.external_id);
    if (it == gemm_us_by_op.end()) continue;
    const auto shape = gemm_shape(op);
    const auto precision = op.input_types.empty() ? std::nullopt : precision_of(op.input_types.back());
    if (!shape || !precision || it->second <= 0.0) {
      ++t.gemm_ops_without_shape;
      gemm_us_by_op.erase(it);
      continue;
    }
    const double flops = 2.0 * static_cast<double>(shape->batch) * static_cast<double>(shape->m) *
                         static_cast<double>(shape->n) * static_cast<double>(shape->k);
    // A batched GEMM is recorded as one GEMM of b x m rows (same work, same k and n).
    gemms[{static_cast<int>(*precision), shape->batch * shape->m, shape->n, shape->k}].push_back(
        flops / (it->second * 1e-6) / 1e12);
    gemm_us_by_op.erase(it);
  }
  t.gemm_ops_without_shape += static_cast<int>(gemm_us_by_op.size());
  for (const auto& [key, tflops] : gemms) {
    const auto& [p, m, n, k] = key;
    t.gemm_measured.push_back({m, n, k, static_cast<config::Precision>(p), sample_stats(tflops).median});
  }
  return t;
}

}  // namespace dtsim::calibration
