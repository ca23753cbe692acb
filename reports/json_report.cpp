// Result v1 (docs/scenario-and-result.md "Result v1"): the resolved scenario and every number of the result record, in a
// fixed key order so that the same record always renders to the same bytes. Doubles are written in
// their shortest round-trip form. engine.wall_s is the one value that depends on the machine running
// dtsim, not on the scenario; callers that need reproducible bytes zero it first (`dtsim run
// --no-timing`).
#include <ostream>

#include "reports/dlrm_report.hpp"
#include "reports/data_parallel_report.hpp"
#include "reports/goodput_report.hpp"
#include "reports/input_report.hpp"
#include "reports/output_envelope.hpp"
#include "reports/reports.hpp"

namespace dtsim::reports {

namespace {

nlohmann::ordered_json throughput_json(const results::Throughput& t) {
  nlohmann::ordered_json j;
  j["samples_per_s"] = t.samples_per_s;
  j["tokens_per_s"] = t.tokens_per_s;
  return j;
}

nlohmann::ordered_json flops_json(const results::Flops& f) {
  nlohmann::ordered_json j;
  j["model_tflops_per_gpu"] = f.model_tflops_per_gpu;
  j["hardware_tflops_per_gpu"] = f.hardware_tflops_per_gpu;
  j["mfu"] = f.mfu;
  j["hfu"] = f.hfu;
  j["peak_tflops_per_gpu"] = f.peak_tflops_per_gpu;
  return j;
}

nlohmann::ordered_json breakdown_json(const results::Breakdown& b) {
  nlohmann::ordered_json j;
  for (const results::BreakdownPart& part : results::kBreakdownParts) j[part.key] = b.*part.value;
  j["compute"] = b.compute_s();
  j["exposed_comm"] = b.exposed_comm_s();
  return j;
}

nlohmann::ordered_json memory_json(const results::Memory& m) {
  nlohmann::ordered_json j;
  j["weights_bytes"] = m.weights_bytes;
  j["gradients_bytes"] = m.gradients_bytes;
  j["optimizer_bytes"] = m.optimizer_bytes;
  j["activations_bytes"] = m.activations_bytes;
  j["buffers_bytes"] = m.buffers_bytes;
  j["peak_bytes_per_gpu"] = m.peak_bytes_per_gpu;
  j["capacity_bytes_per_gpu"] = m.capacity_bytes_per_gpu;
  j["fits"] = m.fits;
  return j;
}

nlohmann::ordered_json engine_json(const results::EngineStats& e) {
  nlohmann::ordered_json j;
  j["events"] = e.events;
  j["tasks"] = e.tasks;
  j["simulated_ranks"] = e.simulated_ranks;
  j["wall_s"] = e.wall_s;
  return j;
}

}  // namespace

nlohmann::ordered_json result_json(const results::Result& result) {
  nlohmann::ordered_json j;
  j["schema_version"] = 1;
  j["dtsim_version"] = DTSIM_VERSION;
  j["scenario"] = scenario_json(result.scenario);
  j["status"] = results::to_string(result.status);
  if (result.reason.empty()) {
    j["reason"] = nullptr;
  } else {
    j["reason"] = result.reason;
  }
  j["iteration_time_s"] = result.iteration_time_s;
  if (result.interval)
    j["interval"] = {{"low_s", result.interval->low_s}, {"high_s", result.interval->high_s}};
  if (const auto& e = result.expected_error; e && !e->validated) {
    j["expected_error"] = {{"validated", false}, {"reason", e->reason}};
  } else if (e) {
    j["expected_error"] = {{"validated", true},
                           {"iteration_time_low_pct", e->low_pct},
                           {"iteration_time_high_pct", e->high_pct},
                           {"iteration_time_median_pct", e->median_pct},
                           {"group", e->group},
                           {"n", e->n},
                           {"match", e->match},
                           {"source", e->source}};
  }
  if (const auto& c = result.compute_calibration) {
    j["compute_calibration"] = {{"factor", c->factor},
                                {"measured_samples_per_s", c->measured_samples_per_s},
                                {"predicted_samples_per_s", c->predicted_samples_per_s},
                                {"source", c->source}};
  }
  if (const auto& jit = result.jitter)
    j["jitter"] = {{"iterations", jit->iterations}, {"iteration_s", distribution_json(jit->iteration_s)}};
  j["throughput"] = throughput_json(result.throughput);
  j["flops"] = flops_json(result.flops);
  j["breakdown_s"] = breakdown_json(result.breakdown);
  j["memory"] = memory_json(result.memory);
  j["engine"] = engine_json(result.engine);
  if (result.data_parallel) j["data_parallel"] = data_parallel_json(*result.data_parallel);
  if (result.convergence) j["convergence"] = convergence_json(*result.convergence);
  if (result.goodput) j["goodput"] = goodput_json(*result.goodput);
  if (result.embeddings) j["embeddings"] = embeddings_json(*result.embeddings);
  if (result.input) j["input"] = input_rate_json(*result.input, result.input_sizing ? &*result.input_sizing : nullptr);
  return j;
}

void write_json(std::ostream& out, const results::Result& result, const nlohmann::ordered_json& inputs) {
  nlohmann::ordered_json j = output_envelope("run", inputs);
  nlohmann::ordered_json fields = result_json(result);
  for (auto& [key, value] : fields.items()) {
    if (!j.contains(key)) j[key] = std::move(value);  // schema_version and dtsim_version are the envelope's
  }
  // Invalid UTF-8 in a name is replaced rather than failing the whole report.
  out << j.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) << '\n';
}

}  // namespace dtsim::reports
