// The HTML report: one self-contained page, well-formed XML (XHTML syntax) so that it also parses as
// XML. Inline CSS, inline SVG charts, no scripts, no external references. Each section shows its
// charts and, under them, the table of the numbers they draw. Charts scale down to the page and table
// cells wrap, so nothing is cut or scrolls sideways at widths from 1,000 px (tests/render).
#include <ostream>
#include <string>

#include "reports/report_sections.hpp"
#include "reports/report_writer.hpp"
#include "reports/svg_chart.hpp"

namespace dtsim::reports {

namespace {

constexpr const char* kStyle = R"(
body { font-family: sans-serif; margin: 24px auto; padding: 0 16px; max-width: 1100px; color: #222; }
h1 { font-size: 22px; } h2 { font-size: 17px; margin-top: 32px; border-bottom: 1px solid #ccc; }
p.note, p.meta { color: #555; font-size: 13px; }
figure { margin: 8px 0; }
figure svg { max-width: 100%; height: auto; }
table { border-collapse: collapse; font-size: 12px; margin: 8px 0 16px; max-width: 100%; }
th, td { border: 1px solid #ddd; padding: 3px 7px; text-align: right; }
th { overflow-wrap: anywhere; } td { overflow-wrap: break-word; }
th { background: #f2f2f2; } td:first-child, th:first-child { text-align: left; }
)";

void write_table(std::ostream& out, const ReportTable& table) {
  using svg::escape_xml;
  out << "<div class=\"table-wrap\"><table>\n<thead><tr>";
  for (const std::string& h : table.header) out << "<th>" << escape_xml(h) << "</th>";
  out << "</tr></thead>\n<tbody>\n";
  for (const auto& row : table.rows) {
    out << "<tr>";
    for (const std::string& cell : row) out << "<td>" << escape_xml(cell) << "</td>";
    out << "</tr>\n";
  }
  out << "</tbody></table></div>\n";
}

}  // namespace

void write_html_report(std::ostream& out, const results::ReportData& data) {
  using svg::escape_xml;
  const std::vector<ReportSection> sections = report_sections(data);
  out << "<!DOCTYPE html>\n<html xmlns=\"http://www.w3.org/1999/xhtml\" lang=\"en\">\n<head>\n"
      << "<meta charset=\"utf-8\"/>\n<title>" << escape_xml(data.title) << "</title>\n<style>" << kStyle
      << "</style>\n</head>\n<body>\n<h1>" << escape_xml(data.title) << "</h1>\n<p class=\"meta\">dtsim "
      << results::to_string(data.kind) << " report: " << data.entries.size()
      << (data.entries.size() == 1 ? " scenario" : " scenarios");
  if (data.scaling != results::ReportScaling::none)
    out << ", " << results::to_string(data.scaling) << " scaling";
  out << ". Sections:";
  for (std::size_t i = 0; i < sections.size(); ++i) {
    out << (i == 0 ? " " : ", ") << "<a href=\"#" << sections[i].id << "\">"
        << escape_xml(sections[i].heading) << "</a>";
  }
  out << ".</p>\n";
  for (const ReportSection& s : sections) {
    out << "<section id=\"" << s.id << "\">\n<h2>" << escape_xml(s.heading) << "</h2>\n";
    if (!s.note.empty()) out << "<p class=\"note\">" << escape_xml(s.note) << "</p>\n";
    for (const std::string& chart : s.svgs) out << "<figure>\n" << chart << "</figure>\n";
    write_table(out, s.table);
    out << "</section>\n";
  }
  out << "</body>\n</html>\n";
}

}  // namespace dtsim::reports
