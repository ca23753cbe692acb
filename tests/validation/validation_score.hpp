// Scoring predictions against published measurements: mean absolute percentage error, the error of a
// constant guess (the group's median measurement) as the baseline a model must beat, and how many row
// pairs whose measurements differ by more than 5% the predictions order the same way.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "core/nearest_rank.hpp"

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
  // The 10th and 90th percentiles of the same signed errors (nearest rank): the band that
  // hardware_profiles/accuracy.json ships for the regime the group validates.
  double p10_signed = 0.0;
  double p90_signed = 0.0;
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
  const std::size_t half = signed_errors.size() / 2;  // an even count: the mean of the two middle ones
  s.median_signed = signed_errors.size() % 2 == 1 ? signed_errors[half]
                                                  : (signed_errors[half - 1] + signed_errors[half]) / 2.0;
  s.p10_signed = dtsim::core::nearest_rank(signed_errors, 0.1);
  s.p90_signed = dtsim::core::nearest_rank(signed_errors, 0.9);
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

// Prints a group's rows and score, and checks its MAPE against the record of every group's figures
// (tests/validation/fidelity_record.json): a change that makes a group's MAPE grow by more than one
// point fails, and a new group must be recorded. An intended change updates the record in the same
// commit: DTSIM_UPDATE_FIDELITY=1 build/tests/dtsim_tests -tc='validation*' rewrites it (one process).
inline void report_group(const std::string& title, const std::vector<ValidationRow>& rows, const ValidationScore& s) {
  std::printf("\n%s\n", title.c_str());
  std::printf("  %-44s %12s %12s %8s\n", "row", "measured", "predicted", "error");
  for (const auto& r : rows) {
    std::printf("  %-44s %12.4g %12.4g %7.1f%%\n", r.name.c_str(), r.measured, r.predicted,
                100.0 * (r.predicted - r.measured) / r.measured);
  }
  std::printf("  MAPE %.1f%%, median signed error %+.1f%% (p10 %+.1f%%, p90 %+.1f%%; constant guess %.1f%%), pairs "
              "ordered %d/%d\n",
              s.mape, s.median_signed, s.p10_signed, s.p90_signed, s.constant_mape, s.ordered, s.pairs);

  const std::string path = std::string(DTSIM_TESTS_DIR) + "/validation/fidelity_record.json";
  nlohmann::ordered_json record;
  {
    std::ifstream in(path);
    REQUIRE_MESSAGE(in, "cannot read " << path);
    record = nlohmann::ordered_json::parse(in);
  }
  const auto round1 = [](double v) { return std::round(v * 10.0) / 10.0; };
  if (std::getenv("DTSIM_UPDATE_FIDELITY") != nullptr) {
    record["groups"][title] = {{"n", rows.size()},
                               {"mape_pct", round1(s.mape)},
                               {"median_signed_pct", round1(s.median_signed)},
                               {"p10_signed_pct", round1(s.p10_signed)},
                               {"p90_signed_pct", round1(s.p90_signed)},
                               {"constant_guess_mape_pct", round1(s.constant_mape)},
                               {"pairs_ordered", s.ordered},
                               {"pairs", s.pairs}};
    std::ofstream(path) << record.dump(1) << "\n";
    // The shipped band of the regime this group validates (hardware_profiles/accuracy.json) follows.
    const std::string regimes_path = std::string(DTSIM_TESTS_DIR) + "/../hardware_profiles/accuracy.json";
    std::ifstream regimes_in(regimes_path);
    REQUIRE_MESSAGE(regimes_in, "cannot read " << regimes_path);
    nlohmann::ordered_json regimes = nlohmann::ordered_json::parse(regimes_in);
    regimes_in.close();
    bool changed = false;
    for (auto& r : regimes["regimes"]) {
      if (r["group"] != title) continue;
      for (const char* key : {"n", "mape_pct", "median_signed_pct", "p10_signed_pct", "p90_signed_pct"})
        r[key] = record["groups"][title][key];
      changed = true;
    }
    if (changed) std::ofstream(regimes_path) << regimes.dump(1) << "\n";
    return;
  }
  const auto& groups = record["groups"];
  REQUIRE_MESSAGE(groups.contains(title), "group '" << title << "' is not in " << path);
  const double recorded = groups[title]["mape_pct"].get<double>();
  INFO("group '" << title << "': MAPE " << s.mape << "%, recorded " << recorded << "%");
  CHECK(s.mape <= recorded + 1.0);
}

}  // namespace dtsim::testing
