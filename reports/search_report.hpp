// Renderers of a strategy search's records (search/search.hpp): text for terminals, JSON (counts,
// rejection classes, speed and the ranked plans with their Result v1) and CSV (one row per ranked
// plan: rank, label, headroom, then the Result columns of csv_report.hpp).
#pragma once

#include <ostream>

#include "reports/reports.hpp"
#include "search/search.hpp"

namespace dtsim::reports {

// JSON: Output v1 (output_envelope.hpp) with `inputs`, the search's counts ("search") and the ranked
// plans ("results": rank, label, headroom_bytes, result).
void write_search(std::ostream& out, const config::Scenario& base, const search::SearchOutcome& outcome,
                  Format format, const nlohmann::ordered_json& inputs = nlohmann::ordered_json::object());

// The rate plans are compared in: a DLRM's samples per second (it has no tokens), else tokens per
// second; its column header for plans of `base`.
double compared_rate(const results::Result& r);
const char* compared_rate_label(const config::Scenario& base);

// Pieces the capacity plan's renderer shares.
nlohmann::ordered_json search_counts_json(const search::SearchOutcome& outcome);
// "4120  out of memory (memory model)" lines, indented.
void write_rejections_text(std::ostream& out, const search::SearchOutcome& outcome, const char* indent);

}  // namespace dtsim::reports
