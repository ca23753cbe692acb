// Side-by-side comparison of evaluated scenarios: one column per scenario, one row per key result
// and breakdown part (text); the same results as a JSON array or CSV rows.
#pragma once

#include <ostream>
#include <vector>

#include "results/result.hpp"

namespace dtsim::reports {

void write_compare_text(std::ostream& out, const std::vector<results::Result>& results);
void write_compare_json(std::ostream& out, const std::vector<results::Result>& results);

}  // namespace dtsim::reports
