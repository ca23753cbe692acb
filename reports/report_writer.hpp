// Report files (`--report FILE` on run, sweep and compare): the format follows the file's
// extension. All three render the same ReportData (results/report_data.hpp):
//   .html  one self-contained page (inline CSS and SVG charts, no scripts, no network), well-formed XML
//   .md    the same sections as Markdown tables
//   .csv   one row per entry: the label, the knobs, then the columns of the CSV result format
#pragma once

#include <optional>
#include <ostream>
#include <string>

#include "results/report_data.hpp"

namespace dtsim::reports {

enum class ReportFormat { html, markdown, csv };

// By extension, case-insensitive: .html/.htm, .md, .csv; nullopt for anything else.
std::optional<ReportFormat> report_format_for(const std::string& path);

void write_html_report(std::ostream& out, const results::ReportData& data);
void write_markdown_report(std::ostream& out, const results::ReportData& data);
void write_report_csv(std::ostream& out, const results::ReportData& data);
void write_report(std::ostream& out, const results::ReportData& data, ReportFormat format);

}  // namespace dtsim::reports
