// The Markdown report: the HTML report's sections as headings, notes and pipe tables (charts are in
// the HTML report). Cells escape '|' and turn line breaks into spaces.
#include <ostream>
#include <string>

#include "reports/report_sections.hpp"
#include "reports/report_writer.hpp"

namespace dtsim::reports {

namespace {

std::string cell(const std::string& text) {
  std::string out;
  for (const char c : text) {
    if (c == '|') {
      out += "\\|";
    } else if (c == '\n' || c == '\r') {
      out += ' ';
    } else {
      out += c;
    }
  }
  return out;
}

void write_row(std::ostream& out, const std::vector<std::string>& cells) {
  out << '|';
  for (const std::string& c : cells) out << ' ' << cell(c) << " |";
  out << '\n';
}

}  // namespace

void write_markdown_report(std::ostream& out, const results::ReportData& data) {
  out << "# " << cell(data.title) << "\n\n"
      << "dtsim " << results::to_string(data.kind) << " report: " << data.entries.size()
      << (data.entries.size() == 1 ? " scenario" : " scenarios");
  if (data.scaling != results::ReportScaling::none)
    out << ", " << results::to_string(data.scaling) << " scaling";
  out << ".\n";
  for (const ReportSection& s : report_sections(data)) {
    out << "\n## " << s.heading << "\n\n";
    if (!s.note.empty()) out << cell(s.note) << ".\n\n";
    write_row(out, s.table.header);
    out << '|';
    for (std::size_t i = 0; i < s.table.header.size(); ++i) out << " --- |";
    out << '\n';
    for (const auto& row : s.table.rows) write_row(out, row);
  }
}

}  // namespace dtsim::reports
