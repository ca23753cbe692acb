// libFuzzer target: the PyTorch profiler trace reader (config::parse_kineto_trace_text).
#include "config/kineto_reader.hpp"
#include "fuzz_target.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return dtsim::fuzz::accept_or_refuse(
      [&] { dtsim::config::parse_kineto_trace_text(dtsim::fuzz::as_text(data, size), "fuzz.json"); });
}
