// The CSV rendering in parts, for writers that emit rows one at a time (write_result with one record).
// write_csv() in reports.hpp is the header followed by one row per result.
#pragma once

#include <ostream>

#include "results/result.hpp"

namespace dtsim::reports {

void write_csv_header(std::ostream& out);
void write_csv_row(std::ostream& out, const results::Result& result);

}  // namespace dtsim::reports
