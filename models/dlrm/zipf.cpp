#include "models/dlrm/zipf.hpp"

#include <algorithm>
#include <cmath>

namespace dtsim::models {

// Named, not anonymous: unity builds put several files in one translation unit.
namespace zipf_sums {

constexpr double kExactTerms = 1000.0;
constexpr double kBinsPerDecade = 128.0;

// 1 - (1 - p)^n, accurate for tiny p and huge n.
double touched(double p, double n) {
  if (p >= 1.0) return 1.0;
  return -std::expm1(n * std::log1p(-p));
}

}  // namespace zipf_sums

double zipf_harmonic(double k, double exponent) {
  using namespace zipf_sums;
  const double s = exponent;
  double sum = 0.0;
  const double head = std::min(std::floor(k), kExactTerms);
  for (double i = 1.0; i <= head; i += 1.0) sum += std::pow(i, -s);
  if (k <= kExactTerms) return sum;
  // The midpoint rule's error is below 1e-7 of the sum past 1000 terms.
  const double a = kExactTerms + 0.5;
  const double b = std::floor(k) + 0.5;
  if (std::abs(s - 1.0) < 1e-12) return sum + std::log(b / a);
  return sum + (std::pow(b, 1.0 - s) - std::pow(a, 1.0 - s)) / (1.0 - s);
}

double zipf_cache_hit_rate(double rows, double fraction, double exponent) {
  if (rows < 1.0 || fraction <= 0.0) return 0.0;
  if (fraction >= 1.0) return 1.0;
  const double cached = std::max(1.0, std::floor(fraction * rows));
  if (exponent == 0.0) return cached / std::floor(rows);
  return zipf_harmonic(cached, exponent) / zipf_harmonic(rows, exponent);
}

double zipf_distinct_rows(double rows, double lookups, double exponent) {
  using namespace zipf_sums;
  const double r = std::floor(rows);
  if (r < 1.0 || lookups <= 0.0) return 0.0;
  if (exponent == 0.0) return r * touched(1.0 / r, lookups);
  const double h = zipf_harmonic(r, exponent);
  const auto p = [&](double k) { return std::pow(k, -exponent) / h; };
  double sum = 0.0;
  const double head = std::min(r, kExactTerms);
  for (double k = 1.0; k <= head; k += 1.0) sum += touched(p(k), lookups);
  const double step = std::pow(10.0, 1.0 / kBinsPerDecade);
  for (double first = head + 1.0; first <= r;) {
    const double last = std::min(r, std::max(first, std::floor(first * step)));  // rows first .. last
    sum += (last - first + 1.0) * touched(p(std::sqrt(first * last)), lookups);
    first = last + 1.0;
  }
  return std::min(sum, std::min(r, lookups));
}

}  // namespace dtsim::models
