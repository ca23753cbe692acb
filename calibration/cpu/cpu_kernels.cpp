#include "calibration/cpu/cpu_kernels.hpp"

#include <cblas.h>

#include <chrono>
#include <cmath>
#include <cstdint>

#include <fmt/format.h>

#include "core/errors.hpp"

namespace dtsim::calibration::cpu {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Deterministic values in [-1, 1) (64-bit linear congruential generator, Knuth's MMIX constants).
void fill(std::vector<float>& v, std::uint64_t seed) {
  std::uint64_t x = seed;
  for (float& f : v) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    f = static_cast<float>(static_cast<double>(x >> 11) / 9007199254740992.0 * 2.0 - 1.0);
  }
}

void sgemm(const GemmShape3& s, const std::vector<float>& a, const std::vector<float>& b,
           std::vector<float>& c) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(s.m), static_cast<int>(s.n),
              static_cast<int>(s.k), 1.0f, a.data(), static_cast<int>(s.k), b.data(), static_cast<int>(s.n),
              0.0f, c.data(), static_cast<int>(s.n));
}

// Compares 16 outputs spread over C with a double-precision dot product.
void check_sgemm(const GemmShape3& s, const std::vector<float>& a, const std::vector<float>& b,
                 const std::vector<float>& c) {
  for (std::int64_t t = 0; t < 16; ++t) {
    const std::int64_t i = (t * 7919) % s.m;
    const std::int64_t j = (t * 104729) % s.n;
    double ref = 0.0;
    for (std::int64_t p = 0; p < s.k; ++p)
      ref += static_cast<double>(a[static_cast<std::size_t>(i * s.k + p)]) *
             b[static_cast<std::size_t>(p * s.n + j)];
    const double got = c[static_cast<std::size_t>(i * s.n + j)];
    const double tolerance = 1e-4 * std::sqrt(static_cast<double>(s.k)) * (1.0 + std::abs(ref));
    if (std::abs(got - ref) > tolerance) {
      throw core::InternalError(fmt::format("sgemm {}x{}x{} returned C[{}][{}] = {} where {} was expected",
                                            s.m, s.n, s.k, i, j, got, ref));
    }
  }
}

}  // namespace

GemmTiming time_sgemm(const GemmShape3& shape, int repeats, double min_seconds) {
  std::vector<float> a(static_cast<std::size_t>(shape.m * shape.k));
  std::vector<float> b(static_cast<std::size_t>(shape.k * shape.n));
  std::vector<float> c(static_cast<std::size_t>(shape.m * shape.n));
  fill(a, 1);
  fill(b, 2);
  auto start = Clock::now();
  sgemm(shape, a, b, c);  // warm-up, also sizes the inner loop
  const double once = std::max(seconds_since(start), 1e-9);
  check_sgemm(shape, a, b, c);
  const int calls = std::max(1, static_cast<int>(std::ceil(min_seconds / once)));
  std::vector<double> samples;
  for (int r = 0; r < repeats; ++r) {
    start = Clock::now();
    for (int i = 0; i < calls; ++i) sgemm(shape, a, b, c);
    samples.push_back(seconds_since(start) / calls);
  }
  check_sgemm(shape, a, b, c);
  GemmTiming t;
  t.m = shape.m;
  t.n = shape.n;
  t.k = shape.k;
  t.precision = config::Precision::fp32;
  t.seconds = sample_stats(samples);
  return t;
}

std::vector<GemmTiming> time_sgemm_sweep(const std::vector<GemmShape3>& shapes, int repeats,
                                         double min_seconds) {
  std::int64_t a_size = 0;
  std::int64_t b_size = 0;
  std::int64_t c_size = 0;
  for (const auto& s : shapes) {
    a_size = std::max(a_size, s.m * s.k);
    b_size = std::max(b_size, s.k * s.n);
    c_size = std::max(c_size, s.m * s.n);
  }
  std::vector<float> a(static_cast<std::size_t>(a_size));
  std::vector<float> b(static_cast<std::size_t>(b_size));
  std::vector<float> c(static_cast<std::size_t>(c_size));
  fill(a, 1);
  fill(b, 2);
  std::vector<int> calls;
  for (const auto& s : shapes) {  // warm-up and check; sizes each shape's inner loop
    const auto start = Clock::now();
    sgemm(s, a, b, c);
    const double once = std::max(seconds_since(start), 1e-9);
    check_sgemm(s, a, b, c);
    calls.push_back(std::max(1, static_cast<int>(std::ceil(min_seconds / once))));
  }
  std::vector<std::vector<double>> samples(shapes.size());
  for (int r = 0; r < repeats; ++r) {
    for (std::size_t i = 0; i < shapes.size(); ++i) {
      const auto start = Clock::now();
      for (int j = 0; j < calls[i]; ++j) sgemm(shapes[i], a, b, c);
      samples[i].push_back(seconds_since(start) / calls[i]);
    }
  }
  std::vector<GemmTiming> out;
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    sgemm(shapes[i], a, b, c);
    check_sgemm(shapes[i], a, b, c);
    out.push_back({shapes[i].m, shapes[i].n, shapes[i].k, config::Precision::fp32, sample_stats(samples[i])});
  }
  return out;
}

std::vector<MemoryTiming> time_memory(std::int64_t elements, int repeats) {
  const auto n = static_cast<std::size_t>(elements);
  std::vector<double> a(n, 1.0);
  std::vector<double> b(n, 2.0);
  std::vector<double> c(n, 0.5);
  const double scalar = 3.0;
  std::vector<double> copy_s;
  std::vector<double> triad_s;
  for (int r = 0; r < repeats + 1; ++r) {
    auto start = Clock::now();
    for (std::size_t i = 0; i < n; ++i) b[i] = a[i];
    const double copy = seconds_since(start);
    start = Clock::now();
    for (std::size_t i = 0; i < n; ++i) a[i] = b[i] + scalar * c[i];
    const double triad = seconds_since(start);
    if (r == 0) continue;  // warm-up
    copy_s.push_back(copy);
    triad_s.push_back(triad);
  }
  // After the warm-up and `repeats` rounds, a = 1 + (repeats + 1) * 1.5 (each round: b = a, a = b + 1.5).
  const double expected = 1.0 + static_cast<double>(repeats + 1) * scalar * 0.5;
  for (std::size_t i = 0; i < n; i += n / 17 + 1) {
    if (std::abs(a[i] - expected) > 1e-9 * expected) {
      throw core::InternalError(
          fmt::format("triad returned a[{}] = {} where {} was expected", i, a[i], expected));
    }
  }
  const double bytes = static_cast<double>(elements) * sizeof(double);
  return {MemoryTiming{"copy", 2.0 * bytes, sample_stats(copy_s)},
          MemoryTiming{"triad", 3.0 * bytes, sample_stats(triad_s)}};
}

SampleStats time_call_overhead(int repeats) {
  const GemmShape3 one{1, 1, 1};
  std::vector<float> a(1, 1.0f);
  std::vector<float> b(1, 2.0f);
  std::vector<float> c(1, 0.0f);
  constexpr int kCalls = 10000;
  std::vector<double> samples;
  for (int r = 0; r < repeats; ++r) {
    const auto start = Clock::now();
    for (int i = 0; i < kCalls; ++i) sgemm(one, a, b, c);
    samples.push_back(seconds_since(start) / kCalls);
  }
  if (c[0] != 2.0f)
    throw core::InternalError(fmt::format("1x1x1 sgemm returned {} where 2 was expected", c[0]));
  return sample_stats(samples);
}

}  // namespace dtsim::calibration::cpu
