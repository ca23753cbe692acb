// dtsim merge SHARD.jsonl ...: joins the JSON Lines of sweep shards into one, ordered by point index.
#include <fstream>
#include <map>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/cli.hpp"
#include "cli/commands.hpp"
#include "config/json_reader.hpp"
#include "core/errors.hpp"

namespace dtsim::cli {

CLI::App* add_merge_command(CLI::App& app, MergeOptions& o) {
  CLI::App* cmd = app.add_subcommand("merge", "Join the JSON Lines of sweep shards, ordered by point index");
  cmd->add_option("inputs", o.inputs, "Files written by dtsim sweep --shard K/N --format jsonl")->required();
  cmd->add_option("--out", o.out_path, "Write to FILE instead of standard output");
  return cmd;
}

int merge_command(const MergeOptions& o, std::ostream& out) {
  // Read and check everything first: a bad line or a duplicate point stops the merge, nothing written.
  std::map<std::int64_t, std::string> lines;
  for (const auto& path : o.inputs) {
    std::istringstream in(config::read_text_file(path));
    int number = 0;
    for (std::string line; std::getline(in, line);) {
      ++number;
      if (line.empty()) continue;
      nlohmann::json j;
      try {
        j = nlohmann::json::parse(line);
      } catch (const nlohmann::json::parse_error&) {
        throw core::InputError(path, "", fmt::format("line {}: not a JSON object", number));
      }
      if (!j.is_object() || !j.contains("index") || !j["index"].is_number_integer() || !j.contains("result")) {
        throw core::InputError(path, "", fmt::format("line {}: expected a sweep line with \"index\" and \"result\"", number));
      }
      const auto index = j["index"].get<std::int64_t>();
      if (!lines.emplace(index, line).second) {
        throw core::InputError(path, "", fmt::format("line {}: point {} appears twice", number, index));
      }
    }
  }
  if (lines.empty()) {
    throw core::InputError(
        o.inputs.front(), "",
        "no sweep lines in the input; expected the JSON Lines written by dtsim sweep --format jsonl");
  }
  std::ostringstream text;
  for (const auto& [index, line] : lines) text << line << "\n";
  if (o.out_path.empty()) {
    out << text.str();
  } else {
    std::ofstream file(o.out_path);
    if (!file) throw core::InputError(o.out_path, "", "cannot open the output file");
    file << text.str();
  }
  return kExitOk;
}

}  // namespace dtsim::cli
