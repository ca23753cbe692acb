// Side-by-side comparison of evaluated scenarios: one column per scenario, one row per key result
// and breakdown part (text); the same results as a JSON array or CSV rows.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "results/result.hpp"

namespace dtsim::reports {

void write_compare_text(std::ostream& out, const std::vector<results::Result>& results);
// Output v1 (output_envelope.hpp): inputs {"scenarios": [paths]}, "results": one Result v1 each.
void write_compare_json(std::ostream& out, const std::vector<results::Result>& results,
                        const std::vector<std::string>& scenarios);

}  // namespace dtsim::reports
