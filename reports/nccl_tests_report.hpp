// Rendering predicted nccl-tests tables: the text layout of NVIDIA's nccl-tests (so that existing log
// tools, and `dtsim import nccl-tests`, read it) and JSON rows.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "network/nccl_tests.hpp"

namespace dtsim::reports {

struct NcclTestsTable {
  std::string title;   // one comment line describing the setup
  std::string note;    // a second one when not empty (e.g. the fabric's fit is extrapolated)
  std::string op;      // "all_reduce", ...
  std::string type;    // "float", ...
  std::string redop;   // "sum", or "none"
  std::int64_t ranks = 0;
  std::vector<network::NcclTestsRow> rows;
};

void write_nccl_tests_text(std::ostream& out, const NcclTestsTable& table);
// Output v1 (output_envelope.hpp) with `inputs`; "results": one row per size, bandwidths in 10^9 bytes/s.
void write_nccl_tests_json(std::ostream& out, const NcclTestsTable& table, const nlohmann::ordered_json& inputs);

}  // namespace dtsim::reports
