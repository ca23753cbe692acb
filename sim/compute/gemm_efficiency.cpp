#include "compute/gemm_efficiency.hpp"

#include <algorithm>
#include <cmath>

namespace dtsim::compute {

namespace {

// a / b rounded up, for a, b > 0, without forming a + b - 1 (a may be near 2^63).
std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return a / b + (a % b != 0 ? 1 : 0); }

// Products of dimensions in doubles: the dimensions of a huge GEMM (tokens of a huge batch) reach
// 2^63, their products pass it. Exact, and so as the integer products, below 2^53.
double tile_score(const graph::GemmShape& s, std::int64_t tm, std::int64_t tn, int sm_count) {
  const double tiles_m = static_cast<double>(ceil_div(s.m, tm));
  const double tiles_n = static_cast<double>(ceil_div(s.n, tn));
  const double q_tile = static_cast<double>(s.m) * static_cast<double>(s.n) /
                        (tiles_m * static_cast<double>(tm) * (tiles_n * static_cast<double>(tn)));
  const double tiles = tiles_m * tiles_n * static_cast<double>(s.batch);
  const double sms = static_cast<double>(sm_count);
  const double q_wave = tiles / (std::ceil(tiles / sms) * sms);
  return q_tile * q_wave;
}

}  // namespace

double gemm_efficiency(const graph::GemmShape& shape, const config::GemmCurve& curve, int sm_count) {
  if (shape.m <= 0 || shape.n <= 0 || shape.k <= 0 || shape.batch <= 0) return curve.max_efficiency;
  double best = 0.0;
  double size_factor = 1.0;
  std::int64_t tm = curve.tile_m;
  std::int64_t tn = curve.tile_n;
  // Halve the larger side first: 128x256 -> 128x128 -> 64x128 -> 64x64.
  while (true) {
    best = std::max(best, size_factor * tile_score(shape, tm, tn, sm_count));
    if (tm <= 64 && tn <= 64) break;
    if (tm >= tn) {
      tm /= 2;
    } else {
      tn /= 2;
    }
    size_factor *= curve.halving_efficiency;
  }
  const double k = static_cast<double>(shape.k);
  const double q_k = k / (k + curve.k_half);
  return curve.max_efficiency * best * q_k;
}

double gemm_alignment(const graph::GemmShape& shape, double element_bytes, const config::GpuProfile& gpu) {
  const auto vector = static_cast<std::int64_t>(std::max(1.0, 16.0 / element_bytes));  // elements per 16 B
  bool aligned = true;
  bool odd = false;
  for (const std::int64_t dim : {shape.m, shape.n, shape.k}) {
    aligned = aligned && dim % vector == 0;
    odd = odd || dim % 2 != 0;
  }
  if (aligned) return 1.0;
  return odd ? gpu.gemm_unaligned_odd : gpu.gemm_unaligned_even;
}

}  // namespace dtsim::compute
