// --report: the option with its extension check, and rendering a ReportData into the chosen format.
#include "cli/report_option.hpp"

#include <filesystem>
#include <sstream>

#include "cli/output_files.hpp"
#include "core/errors.hpp"
#include "reports/report_writer.hpp"

namespace dtsim::cli {

void add_report_option(CLI::App* cmd, std::string& path) {
  const CLI::Validator extension(
      [](std::string& value) -> std::string {
        if (reports::report_format_for(value)) return "";
        return "the report file must end in .html, .md or .csv: " + value;
      },
      "FILE.html|.md|.csv", "report extension");
  cmd->add_option("--report", path,
                  "Also write a report to FILE; its extension picks the format: .html (charts), .md or .csv")
      ->type_name("FILE")
      ->check(extension);
}

std::string render_report(const std::string& path, const results::ReportData& data) {
  const std::optional<reports::ReportFormat> format = reports::report_format_for(path);
  if (!format) throw core::InputError(path, "", "the report file must end in .html, .md or .csv");
  std::ostringstream out;
  reports::write_report(out, data, *format);
  return out.str();
}

void check_report_folder(const std::string& path) {
  const std::filesystem::path folder = std::filesystem::path(path).parent_path();
  std::error_code error;
  if (!folder.empty() && !std::filesystem::is_directory(folder, error)) {
    throw core::InputError(path, "", "the report's folder does not exist: " + folder.string());
  }
}

void write_report_file(const std::string& path, const results::ReportData& data) {
  write_files({{path, render_report(path, data)}});
}

}  // namespace dtsim::cli
