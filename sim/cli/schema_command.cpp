// `dtsim schema [NAME]`: the JSON Schemas of what dtsim writes (schemas/, docs/scenario-and-result.md
// "Output v1"): one printed as it is in the repository, or the list of names with their titles.
#include <algorithm>
#include <filesystem>
#include <ostream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "cli/cli.hpp"
#include "cli/commands.hpp"
#include "config/json_text.hpp"
#include "core/errors.hpp"

namespace dtsim::cli {

namespace {

constexpr std::string_view kSuffix = ".schema.json";

// The names of the schemas in `folder`, sorted.
std::vector<std::string> schema_names(const std::filesystem::path& folder) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(folder, ec)) {
    const std::string file = entry.path().filename().string();
    if (file.size() > kSuffix.size() && file.ends_with(kSuffix))
      names.push_back(file.substr(0, file.size() - kSuffix.size()));
  }
  if (ec) throw core::InternalError(fmt::format("cannot list the schemas in {}: {}", folder.string(), ec.message()));
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace

CLI::App* add_schema_command(CLI::App& app, SchemaCommandOptions& o) {
  CLI::App* cmd = app.add_subcommand(
      "schema", "Print the JSON Schema of a dtsim output (result, output-run, output-sweep-line, ...), or list them");
  cmd->add_option("name", o.name, "Schema name; without one, the list of names");
  return cmd;
}

int schema_command(const SchemaCommandOptions& o, std::ostream& out) {
  const std::filesystem::path folder(config::default_data_paths().schemas);
  const std::vector<std::string> names = schema_names(folder);
  if (o.name.empty()) {
    for (const std::string& name : names) {
      const std::string path = (folder / (name + std::string(kSuffix))).string();
      const nlohmann::json schema = config::parse_json_text(config::read_text_file(path), path);
      out << fmt::format("{:<20} {}\n", name, schema.value("title", std::string()));
    }
    return kExitOk;
  }
  if (std::find(names.begin(), names.end(), o.name) == names.end()) {
    throw core::InputError("command line", "/name",
                           fmt::format("got \"{}\"; expected one of {}", o.name, fmt::join(names, ", ")));
  }
  out << config::read_text_file((folder / (o.name + std::string(kSuffix))).string());
  return kExitOk;
}

}  // namespace dtsim::cli
