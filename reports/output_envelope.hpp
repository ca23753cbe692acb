// Output v1: the envelope every command's JSON document shares (docs/scenario-and-result.md "Output
// v1"; schemas/output-*.schema.json): "schema_version", "dtsim_version", "command" (run, compare,
// search, plan, sweep, nccl-tests, import kineto), "inputs" (the files and options the output depends
// on), then the command's own keys ("results", a list, where a command has several; run's Result v1
// keys at the top level, so that a run's JSON is one Result).
#pragma once

#include <string_view>

#include <nlohmann/json.hpp>

namespace dtsim::reports {

inline constexpr int kOutputSchemaVersion = 1;

nlohmann::ordered_json output_envelope(std::string_view command, nlohmann::ordered_json inputs);

}  // namespace dtsim::reports
