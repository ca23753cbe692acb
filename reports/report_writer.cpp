// Report format by file extension, and dispatch to the renderer.
#include "reports/report_writer.hpp"

#include <algorithm>
#include <cctype>

namespace dtsim::reports {

std::optional<ReportFormat> report_format_for(const std::string& path) {
  const std::size_t dot = path.find_last_of('.');
  const std::size_t slash = path.find_last_of('/');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) return std::nullopt;
  std::string ext = path.substr(dot + 1);
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (ext == "html" || ext == "htm") return ReportFormat::html;
  if (ext == "md") return ReportFormat::markdown;
  if (ext == "csv") return ReportFormat::csv;
  return std::nullopt;
}

void write_report(std::ostream& out, const results::ReportData& data, ReportFormat format) {
  switch (format) {
    case ReportFormat::html:
      write_html_report(out, data);
      return;
    case ReportFormat::markdown:
      write_markdown_report(out, data);
      return;
    case ReportFormat::csv:
      write_report_csv(out, data);
      return;
  }
}

}  // namespace dtsim::reports
