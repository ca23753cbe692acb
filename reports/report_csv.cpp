// Report as CSV: "entry", one column per knob key and per figure, then the CSV result columns
// (csv_report.hpp), one row per entry. Fields are quoted as RFC 4180 says.
#include <cmath>
#include <sstream>
#include <string>

#include <fmt/format.h>

#include "reports/csv_report.hpp"
#include "reports/report_writer.hpp"

namespace dtsim::reports {

namespace {

std::string field(const std::string& text) {
  if (text.find_first_of(",\"\r\n") == std::string::npos) return text;
  std::string out = "\"";
  for (const char c : text) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

}  // namespace

void write_report_csv(std::ostream& out, const results::ReportData& data) {
  const std::vector<std::string> keys = results::knob_keys(data);
  const std::vector<std::string> figures = results::figure_names(data);
  out << "entry";
  for (const std::string& key : keys) out << ',' << field(key);
  for (const std::string& name : figures) out << ',' << field(name);
  out << ',';
  write_csv_header(out);
  for (const results::ReportEntry& e : data.entries) {
    out << field(e.label);
    for (const std::string& key : keys) {
      std::string value;
      for (const results::Knob& k : e.knobs) {
        if (k.key == key) value = k.value;
      }
      out << ',' << field(value);
    }
    // A figure's value where it has one (full precision), else its text.
    for (const std::string& name : figures) {
      const results::Figure* f = results::find_figure(e, name);
      std::string value;
      if (f != nullptr) value = std::isfinite(f->value) ? fmt::format("{}", f->value) : f->text;
      out << ',' << field(value);
    }
    out << ',';
    write_csv_row(out, e.result);
  }
}

}  // namespace dtsim::reports
