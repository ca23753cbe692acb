// Renderers of a capacity plan's records (search/capacity_plan.hpp): a text table with the cheapest and
// the fastest clusters that meet the plan, JSON (Output v1, output_envelope.hpp: the plan, the picks,
// and "results", every cluster with its best strategy's Result v1) and CSV (one row per strategy).
#pragma once

#include <ostream>

#include "config/plan.hpp"
#include "reports/reports.hpp"
#include "search/capacity_plan.hpp"

namespace dtsim::reports {

void write_plan(std::ostream& out, const config::Plan& plan, const search::PlanOutcome& outcome,
                Format format, const nlohmann::ordered_json& inputs = nlohmann::ordered_json::object());

}  // namespace dtsim::reports
