// libFuzzer target: the nccl-tests log reader (calibration::parse_nccl_log_text).
#include "calibration/nccl_log.hpp"
#include "fuzz_target.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return dtsim::fuzz::accept_or_refuse(
      [&] { dtsim::calibration::parse_nccl_log_text(dtsim::fuzz::as_text(data, size), "fuzz.log"); });
}
