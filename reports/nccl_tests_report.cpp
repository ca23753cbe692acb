#include "reports/nccl_tests_report.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "reports/output_envelope.hpp"

namespace dtsim::reports {

namespace {

// nccl-tests (>= 2.17) prints a number in the field width with 2 decimals, else 1, else 0, else
// scientific notation.
std::string fit_number(double v, int width) {
  for (const int decimals : {2, 1, 0}) {
    std::string s = fmt::format("{:{}.{}f}", v, width, decimals);
    if (static_cast<int>(s.size()) <= width) return s;
  }
  return fmt::format("{:{}.1e}", v, width);
}

}  // namespace

void write_nccl_tests_text(std::ostream& out, const NcclTestsTable& table) {
  out << "# " << table.title << "\n";
  if (!table.note.empty()) out << "# " << table.note << "\n";
  out << "#\n";
  out << "#                                                              out-of-place                       in-place"
         "          \n";
  out << "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw"
         " #wrong\n";
  out << "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)"
         "       \n";
  double sum = 0.0;
  for (const auto& r : table.rows) {
    const std::string half = fmt::format("  {}  {}  {}  {:>6}", fit_number(r.time_us, 7), fit_number(r.algbw_gbps, 6),
                                         fit_number(r.busbw_gbps, 6), "N/A");
    out << fmt::format("{:>12}  {:>12}  {:>8}  {:>6}  {:>6}{}{}\n", static_cast<std::int64_t>(r.size_bytes), r.count,
                       table.type, table.redop, -1, half, half);
    sum += r.busbw_gbps;
  }
  out << "# Out of bounds values : 0 OK\n";
  out << fmt::format("# Avg bus bandwidth    : {:g} \n#\n",
                     table.rows.empty() ? 0.0 : sum / static_cast<double>(table.rows.size()));
}

void write_nccl_tests_json(std::ostream& out, const NcclTestsTable& table, const nlohmann::ordered_json& inputs) {
  nlohmann::ordered_json j = output_envelope("nccl-tests", inputs);
  j["title"] = table.title;
  if (!table.note.empty()) j["note"] = table.note;
  j["op"] = table.op;
  j["type"] = table.type;
  j["ranks"] = table.ranks;
  // nccl-tests' "GB/s" columns are 10^9 bytes per second.
  auto& rows = j["results"] = nlohmann::ordered_json::array();
  for (const auto& r : table.rows) {
    rows.push_back({{"size_bytes", r.size_bytes},
                    {"count", r.count},
                    {"time_us", r.time_us},
                    {"algbw_gbytes_per_s", r.algbw_gbps},
                    {"busbw_gbytes_per_s", r.busbw_gbps}});
  }
  out << j.dump(2) << "\n";
}

}  // namespace dtsim::reports
