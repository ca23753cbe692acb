// Scoring predictions against published measurements: mean absolute percentage error, the error of a
// constant guess (the group's median measurement) as the baseline a model must beat, and how many row
// pairs whose measurements differ by more than 5% the predictions order the same way.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

namespace dtsim::testing {

struct ValidationRow {
  std::string name;
  double measured = 0.0;
  double predicted = 0.0;
};

struct ValidationScore {
  double mape = 0.0;
  double constant_mape = 0.0;
  // Median of (predicted - measured) / measured, in %: for times, negative means predicted faster than
  // measured; for rates (throughput, TFLOP/s, MFU), positive does. A model that is always optimistic is
  // wrong even at a small MAPE.
  double median_signed = 0.0;
  int pairs = 0;
  int ordered = 0;
  double order_fraction() const { return pairs == 0 ? 1.0 : static_cast<double>(ordered) / pairs; }
};

inline ValidationScore score(const std::vector<ValidationRow>& rows) {
  ValidationScore s;
  if (rows.empty()) return s;
  std::vector<double> measured;
  for (const auto& r : rows) {
    s.mape += std::abs(r.predicted - r.measured) / std::abs(r.measured);
    measured.push_back(r.measured);
  }
  s.mape *= 100.0 / static_cast<double>(rows.size());
  std::vector<double> signed_errors;
  for (const auto& r : rows) signed_errors.push_back(100.0 * (r.predicted - r.measured) / r.measured);
  std::sort(signed_errors.begin(), signed_errors.end());
  s.median_signed = signed_errors[signed_errors.size() / 2];
  std::sort(measured.begin(), measured.end());
  const double median = measured[measured.size() / 2];
  for (double m : measured) s.constant_mape += std::abs(median - m) / std::abs(m);
  s.constant_mape *= 100.0 / static_cast<double>(rows.size());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    for (std::size_t j = i + 1; j < rows.size(); ++j) {
      const double a = rows[i].measured, b = rows[j].measured;
      if (std::abs(a - b) / std::max(std::abs(a), std::abs(b)) <= 0.05) continue;
      ++s.pairs;
      if ((a - b) * (rows[i].predicted - rows[j].predicted) > 0) ++s.ordered;
    }
  }
  return s;
}

inline void print_rows(const std::string& title, const std::vector<ValidationRow>& rows, const ValidationScore& s) {
  std::printf("\n%s\n", title.c_str());
  std::printf("  %-44s %12s %12s %8s\n", "row", "measured", "predicted", "error");
  for (const auto& r : rows) {
    std::printf("  %-44s %12.4g %12.4g %7.1f%%\n", r.name.c_str(), r.measured, r.predicted,
                100.0 * (r.predicted - r.measured) / r.measured);
  }
  std::printf("  MAPE %.1f%%, median signed error %+.1f%% (constant guess %.1f%%), pairs ordered %d/%d\n", s.mape,
              s.median_signed, s.constant_mape, s.ordered, s.pairs);
}

}  // namespace dtsim::testing
