// Reader of PyTorch profiler traces (Kineto's Chrome trace JSON, torch.profiler ... export_chrome_trace):
// the GPU activity ("ph": "X" events of cat "kernel", "gpu_memcpy", "gpu_memset") and the CPU operators
// ("cpu_op") they were launched from, linked by args "External id". Only the fields used are read; a
// trace is a foreign format with many more keys, which are ignored. A malformed trace is an InputError
// naming the file and the JSON pointer of the offending value: no "traceEvents" array, an event that
// is not an object, a GPU event without a string "name" or with a missing or negative "dur", "grid" or
// "block" that is not three positive integers, or a trace without any GPU kernel. A trace is read
// under JsonLimits::trace() (json_text.hpp): up to 1 GiB.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dtsim::config {

enum class GpuActivity { kernel, memcpy, memset };

struct KinetoGpuEvent {
  std::string name;
  GpuActivity activity = GpuActivity::kernel;
  double duration_us = 0.0;
  std::optional<std::int64_t> external_id;
  std::optional<std::array<std::int64_t, 3>> grid;
  std::optional<std::array<std::int64_t, 3>> block;
};

struct KinetoCpuOp {
  std::string name;  // e.g. "aten::mm"
  std::int64_t external_id = 0;
  std::vector<std::vector<std::int64_t>> input_dims;  // args "Input Dims" (empty lists for scalars)
  std::vector<std::string> input_types;               // args "Input type", e.g. "c10::BFloat16"
};

struct KinetoTrace {
  std::string file;
  std::vector<KinetoGpuEvent> gpu;
  std::vector<KinetoCpuOp> cpu_ops;  // those with an "External id"
};

KinetoTrace read_kineto_trace(const std::string& path);
KinetoTrace parse_kineto_trace_text(const std::string& text, const std::string& file);

}  // namespace dtsim::config
