// PyTorch profiler (Kineto) traces: kernel classification, the kernel table of a hand-written trace in
// Kineto's format (tests/data/kineto/train_step.json), the GEMM rows it implies, the CLI command, and
// the malformed traces in tests/invalid/kineto (each with the message it must produce).
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "calibration/kernel_table.hpp"
#include "cli/cli.hpp"
#include "config/kineto_reader.hpp"
#include "core/errors.hpp"

namespace cal = dtsim::calibration;
namespace fs = std::filesystem;
using dtsim::config::GpuActivity;

namespace {

fs::path sample_trace() { return fs::path(DTSIM_TESTS_DIR) / "data" / "kineto" / "train_step.json"; }

}  // namespace

TEST_CASE("kernel names map to operator classes") {
  CHECK(cal::classify_kernel("nvjet_hsh_256x128_64x4_2x1_v_bz_coopA_TNT", GpuActivity::kernel) ==
        cal::OperatorClass::gemm);
  CHECK(cal::classify_kernel("ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_64x3_tn",
                             GpuActivity::kernel) == cal::OperatorClass::gemm);
  CHECK(cal::classify_kernel("void pytorch_flash::flash_fwd_kernel<...>", GpuActivity::kernel) ==
        cal::OperatorClass::attention);
  CHECK(cal::classify_kernel("ncclDevKernel_AllGather_RING_LL", GpuActivity::kernel) ==
        cal::OperatorClass::nccl);
  CHECK(cal::classify_kernel("void at::native::vectorized_layer_norm_kernel<float>", GpuActivity::kernel) ==
        cal::OperatorClass::normalization);
  CHECK(cal::classify_kernel("void at::native::vectorized_elementwise_kernel<4>", GpuActivity::kernel) ==
        cal::OperatorClass::elementwise);
  CHECK(cal::classify_kernel("Memcpy HtoD (Pinned -> Device)", GpuActivity::memcpy) ==
        cal::OperatorClass::memory_copy);
  CHECK(cal::classify_kernel("my_custom_kernel", GpuActivity::kernel) == cal::OperatorClass::other);
}

TEST_CASE("the sample trace: classes, kernel durations and GEMM rows") {
  const auto trace = dtsim::config::read_kineto_trace(sample_trace().string());
  CHECK(trace.gpu.size() == 8);  // 7 kernels and one memcpy; cpu ops and runtime calls are not GPU events
  const cal::KernelTable t = cal::kernel_table(trace);
  // Total: 1040.2 + 372.1 + 380.3 + 410 + 120 + 60 + 850 + 15 = 3247.6 us.
  CHECK(t.total_us == doctest::Approx(3247.6));
  REQUIRE(t.classes.size() == 6);
  CHECK(t.classes[0].cls == cal::OperatorClass::gemm);
  CHECK(t.classes[0].kernels == 3);
  CHECK(t.classes[0].total_us == doctest::Approx(1792.6));
  CHECK(t.classes[0].share == doctest::Approx(1792.6 / 3247.6));
  // The two xmma GEMM launches have one name: median of {372.1, 380.3} = 376.2.
  const auto xmma = std::find_if(t.kernels.begin(), t.kernels.end(),
                                 [](const cal::KernelRow& k) { return k.name.rfind("sm90_xmma", 0) == 0; });
  REQUIRE(xmma != t.kernels.end());
  CHECK(xmma->duration_us.count == 2);
  CHECK(xmma->duration_us.median == doctest::Approx(376.2));
  CHECK(t.kernels.front().total_us == doctest::Approx(1040.2));  // largest first
  // GEMM rows (bf16, sorted by m, n, k):
  //   aten::mm 8192 x 4096 x 4096 twice: 2 x 8192 x 4096 x 4096 / 372.1 us = 738.7 and / 380.3 us = 722.8
  //   TFLOP/s, median 730.7; aten::addmm [8192, 4096] x [4096, 12288]: 2 x 8192 x 12288 x 4096 / 1040.2 us
  //   = 792.8 TFLOP/s.
  REQUIRE(t.gemm_measured.size() == 2);
  CHECK(t.gemm_measured[0].m == 8192);
  CHECK(t.gemm_measured[0].n == 4096);
  CHECK(t.gemm_measured[0].k == 4096);
  const double flops = 2.0 * 8192 * 4096 * 4096;
  CHECK(t.gemm_measured[0].tflops == doctest::Approx((flops / 372.1e-6 + flops / 380.3e-6) / 2 / 1e12));
  CHECK(t.gemm_measured[1].n == 12288);
  CHECK(t.gemm_measured[1].tflops == doctest::Approx(2.0 * 8192 * 12288 * 4096 / 1040.2e-6 / 1e12));
  CHECK(t.gemm_measured[1].precision == dtsim::config::Precision::bf16);
  CHECK(t.gemm_ops_without_shape == 0);
}

TEST_CASE("a GEMM whose dimensions are not all from 1 to 2^31 - 1 gives no GEMM row") {
  // The sample's aten::addmm (event 0) with its first matrix as [-1, 4096], then as [2^40, 4096]: not a
  // GEMM cuBLAS runs, so it counts among the GEMM ops without a shape and the two aten::mm remain.
  std::ifstream f(sample_trace());
  nlohmann::json trace = nlohmann::json::parse(f);
  REQUIRE(trace["traceEvents"][0]["name"] == "aten::addmm");
  for (const std::int64_t rows : {std::int64_t{-1}, std::int64_t{1} << 40}) {
    trace["traceEvents"][0]["args"]["Input Dims"][1][0] = rows;
    const cal::KernelTable t =
        cal::kernel_table(dtsim::config::parse_kineto_trace_text(trace.dump(), "mutated"));
    CHECK(t.gemm_ops_without_shape == 1);
    REQUIRE(t.gemm_measured.size() == 1);
    CHECK(t.gemm_measured[0].n == 4096);
  }
}

TEST_CASE("dtsim import kineto writes the table and refits a GPU's curve") {
  const fs::path out = fs::temp_directory_path() / "dtsim_test_kineto_table.json";
  std::istringstream in;
  std::ostringstream o;
  std::ostringstream e;
  const int status = dtsim::cli::run_cli(
      {"import", "kineto", sample_trace().string(), "--out", out.string(), "--gpu", "h100-sxm5-80gb"}, in, o,
      e);
  CHECK_MESSAGE(status == 0, e.str());
  CHECK(o.str().find("gemm 55.2%") != std::string::npos);  // 1792.6 / 3247.6
  std::ifstream f(out);
  std::stringstream text;
  text << f.rdbuf();
  CHECK(text.str().find("\"gemm_fit\"") != std::string::npos);
  CHECK(text.str().find("\"gemm_measured\"") != std::string::npos);
  fs::remove(out);
}

TEST_CASE("malformed traces are input errors naming the file and the JSON pointer") {
  const fs::path dir = fs::path(DTSIM_TESTS_DIR) / "invalid" / "kineto";
  int cases = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() != ".json") continue;
    std::ifstream expected_file(fs::path(entry.path()).replace_extension(".error"));
    std::string expected;
    std::getline(expected_file, expected);
    CAPTURE(entry.path().string());
    REQUIRE_FALSE(expected.empty());
    bool thrown = false;
    try {
      dtsim::config::read_kineto_trace(entry.path().string());
    } catch (const dtsim::core::InputError& err) {
      thrown = true;
      const std::string what = err.what();
      CHECK_MESSAGE(what.find(expected) != std::string::npos, what);
      CHECK(what.find(entry.path().filename().string()) != std::string::npos);
    }
    CHECK(thrown);
    ++cases;
  }
  CHECK(cases >= 9);
}
