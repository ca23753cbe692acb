// The CSV rendering in parts, for writers that emit rows one at a time (write_result with one record).
// write_csv() in reports.hpp is the header followed by one row per result.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "results/result.hpp"

namespace dtsim::reports {

// `leading`: columns before the result's own (a sweep's swept keys, named by their JSON pointers), each
// row giving its values in the same order.
void write_csv_header(std::ostream& out, const std::vector<std::string>& leading = {});
void write_csv_row(std::ostream& out, const results::Result& result, const std::vector<std::string>& leading = {});

}  // namespace dtsim::reports
