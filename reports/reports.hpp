// Renderers of result records (DESIGN.md: reports compute nothing; they format what the engine and
// models produced). Text for terminals, JSON (Result v1, docs/scenario-and-result.md "Result v1"), CSV (one header row and
// one row per result), and Chrome trace JSON that Perfetto and chrome://tracing open.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/scenario.hpp"
#include "results/result.hpp"

namespace dtsim::reports {

enum class Format { text, json, csv };

// The scenario as resolved (presets expanded, defaults filled in), in Scenario v1 form.
nlohmann::ordered_json scenario_json(const config::Scenario& scenario);
// Result v1.
nlohmann::ordered_json result_json(const results::Result& result);

void write_text(std::ostream& out, const results::Result& result);
// A run's JSON: Output v1's envelope (output_envelope.hpp) with `inputs`, and the Result's keys.
void write_json(std::ostream& out, const results::Result& result,
                const nlohmann::ordered_json& inputs = nlohmann::ordered_json::object());
void write_csv(std::ostream& out, const std::vector<results::Result>& results);
void write_result(std::ostream& out, const results::Result& result, Format format,
                  const nlohmann::ordered_json& inputs = nlohmann::ordered_json::object());

// Chrome trace event format (JSON object with "traceEvents"); requires result.trace.
void write_chrome_trace(std::ostream& out, const results::Result& result);

}  // namespace dtsim::reports
