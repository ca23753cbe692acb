// CSV: one header row, one row per result, flat columns. Fields are quoted as RFC 4180 says (a field
// holding a comma, a double quote, CR or LF is enclosed in double quotes, inner quotes doubled); rows
// end in LF. Doubles use their shortest round-trip form, booleans are true/false, an absent reason
// is an empty field.
#include "reports/csv_report.hpp"

#include <array>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "reports/reports.hpp"

namespace dtsim::reports {

namespace {

using results::Result;

struct Column {
  const char* name;
  std::string (*value)(const Result&);
};

std::string num(double v) { return fmt::format("{}", v); }
std::string num(std::int64_t v) { return fmt::format("{}", v); }
std::string flag(bool v) { return v ? "true" : "false"; }
// A transformer's shape, empty for the workloads that have none (layer tables, DLRMs).
std::string transformer_num(const Result& r, std::int64_t v) {
  return r.scenario.layer_model || r.scenario.dlrm ? std::string() : num(v);
}

// The columns, in order: what was run, then what came out; the breakdown's parts come between these and
// kTailColumns.
constexpr std::array kColumns = {
    Column{"name", [](const Result& r) { return r.scenario.name; }},
    Column{"status", [](const Result& r) { return std::string(results::to_string(r.status)); }},
    Column{"reason", [](const Result& r) { return r.reason; }},
    Column{"model",
           [](const Result& r) {
             return r.scenario.layer_model ? r.scenario.layer_model->id
                    : r.scenario.dlrm
                        ? (r.scenario.dlrm->preset.empty() ? std::string("dlrm") : r.scenario.dlrm->preset)
                        : r.scenario.model.preset;
           }},
    Column{"layers", [](const Result& r) { return transformer_num(r, r.scenario.model.layers); }},
    Column{"hidden_size", [](const Result& r) { return transformer_num(r, r.scenario.model.hidden_size); }},
    Column{"seq_length", [](const Result& r) { return transformer_num(r, r.scenario.model.seq_length); }},
    Column{"gpus", [](const Result& r) { return num(r.scenario.gpu_count()); }},
    Column{"nodes", [](const Result& r) { return num(r.scenario.cluster.nodes); }},
    Column{"node", [](const Result& r) { return r.scenario.cluster.node_id; }},
    Column{"gpu", [](const Result& r) { return r.scenario.gpu.id; }},
    Column{"fabric", [](const Result& r) { return r.scenario.cluster.network.fabric; }},
    Column{"nic_gbps", [](const Result& r) { return num(r.scenario.cluster.network.nic_gbps); }},
    Column{"data", [](const Result& r) { return num(r.scenario.parallelism.data); }},
    Column{"tensor", [](const Result& r) { return num(r.scenario.parallelism.tensor); }},
    Column{"pipeline", [](const Result& r) { return num(r.scenario.parallelism.pipeline); }},
    Column{"virtual_stages", [](const Result& r) { return num(r.scenario.parallelism.virtual_stages); }},
    Column{"context", [](const Result& r) { return num(r.scenario.parallelism.context); }},
    Column{"expert", [](const Result& r) { return num(r.scenario.parallelism.expert); }},
    Column{"sequence_parallel",
           [](const Result& r) { return flag(r.scenario.parallelism.sequence_parallel); }},
    Column{"zero_stage",
           [](const Result& r) { return fmt::format("{}", r.scenario.parallelism.zero_stage); }},
    Column{"zero3", [](const Result& r) { return config::zero3_label(r.scenario.parallelism); }},
    Column{"distributed_optimizer",
           [](const Result& r) { return flag(r.scenario.parallelism.distributed_optimizer); }},
    Column{"tp_comm_overlap",
           [](const Result& r) { return flag(config::tp_comm_overlap_in_effect(r.scenario.parallelism)); }},
    Column{"schedule",
           [](const Result& r) { return std::string(config::to_string(r.scenario.parallelism.schedule)); }},
    Column{"global_batch_size", [](const Result& r) { return num(r.scenario.training.global_batch_size); }},
    Column{"micro_batch_size",  // a DLRM has none (config/dlrm_loader.hpp)
           [](const Result& r) { return r.scenario.dlrm ? std::string() : num(r.scenario.training.micro_batch_size); }},
    Column{"precision",
           [](const Result& r) { return std::string(config::to_string(r.scenario.training.precision)); }},
    Column{"activation_recompute",
           [](const Result& r) {
             return r.scenario.dlrm ? std::string()
                                    : std::string(config::to_string(r.scenario.training.activation_recompute));
           }},
    Column{"network_model",
           [](const Result& r) { return std::string(config::to_string(r.scenario.simulation.network)); }},
    Column{"iteration_time_s", [](const Result& r) { return num(r.iteration_time_s); }},
    Column{"samples_per_s", [](const Result& r) { return num(r.throughput.samples_per_s); }},
    Column{"tokens_per_s", [](const Result& r) { return num(r.throughput.tokens_per_s); }},
    Column{"model_tflops_per_gpu", [](const Result& r) { return num(r.flops.model_tflops_per_gpu); }},
    Column{"hardware_tflops_per_gpu", [](const Result& r) { return num(r.flops.hardware_tflops_per_gpu); }},
    Column{"peak_tflops_per_gpu", [](const Result& r) { return num(r.flops.peak_tflops_per_gpu); }},
    Column{"mfu", [](const Result& r) { return num(r.flops.mfu); }},
    Column{"hfu", [](const Result& r) { return num(r.flops.hfu); }},
};

// After the breakdown parts (results::kBreakdownParts, each as "<key>_s").
constexpr std::array kTailColumns = {
    Column{"compute_s", [](const Result& r) { return num(r.breakdown.compute_s()); }},
    Column{"exposed_comm_s", [](const Result& r) { return num(r.breakdown.exposed_comm_s()); }},
    Column{"peak_bytes_per_gpu", [](const Result& r) { return num(r.memory.peak_bytes_per_gpu); }},
    Column{"capacity_bytes_per_gpu", [](const Result& r) { return num(r.memory.capacity_bytes_per_gpu); }},
    Column{"fits", [](const Result& r) { return flag(r.memory.fits); }},
    // training.measured_single_gpu: measured / predicted one-GPU throughput; empty without it.
    // The closest validated regime's band of the iteration time's error (empty: none).
    Column{"expected_error_low_pct",
           [](const Result& r) {
             return r.expected_error && r.expected_error->validated ? num(r.expected_error->low_pct)
                                                                    : std::string();
           }},
    Column{"expected_error_high_pct",
           [](const Result& r) {
             return r.expected_error && r.expected_error->validated ? num(r.expected_error->high_pct)
                                                                    : std::string();
           }},
    // Under the scenario's failures (empty without them): median time to train and goodput over the runs.
    Column{"train_with_failures_p50_s",
           [](const Result& r) {
             return r.goodput && r.goodput->reason.empty() ? num(r.goodput->wall_s.p50) : std::string();
           }},
    Column{"goodput_p50",
           [](const Result& r) {
             return r.goodput && r.goodput->reason.empty() ? num(r.goodput->goodput.p50) : std::string();
           }},
    // The input pipeline's rate and the resource that limits it (empty without a pipeline).
    Column{"input_samples_per_s",
           [](const Result& r) { return r.input ? num(r.input->samples_per_s) : std::string(); }},
    Column{"input_limited_by", [](const Result& r) { return r.input ? r.input->limited_by : std::string(); }},
    Column{"compute_calibration_factor",
           [](const Result& r) {
             return r.compute_calibration ? num(r.compute_calibration->factor) : std::string();
           }},
};

void write_field(std::ostream& out, std::string_view field) {
  if (field.find_first_of(",\"\r\n") == std::string_view::npos) {
    out << field;
    return;
  }
  out << '"';
  for (char c : field) {
    if (c == '"') out << '"';
    out << c;
  }
  out << '"';
}

}  // namespace

void write_csv_header(std::ostream& out, const std::vector<std::string>& leading) {
  for (const std::string& name : leading) {
    write_field(out, name);
    out << ',';
  }
  for (std::size_t i = 0; i < kColumns.size(); ++i) {
    if (i > 0) out << ',';
    write_field(out, kColumns[i].name);
  }
  for (const results::BreakdownPart& part : results::kBreakdownParts)
    write_field(out << ',', std::string(part.key) + "_s");
  for (const Column& column : kTailColumns) write_field(out << ',', column.name);
  out << '\n';
}

void write_csv_row(std::ostream& out, const results::Result& result,
                   const std::vector<std::string>& leading) {
  for (const std::string& value : leading) {
    write_field(out, value);
    out << ',';
  }
  for (std::size_t i = 0; i < kColumns.size(); ++i) {
    if (i > 0) out << ',';
    write_field(out, kColumns[i].value(result));
  }
  for (const results::BreakdownPart& part : results::kBreakdownParts) {
    write_field(out << ',', num(result.breakdown.*part.value));
  }
  for (const Column& column : kTailColumns) write_field(out << ',', column.value(result));
  out << '\n';
}

void write_csv(std::ostream& out, const std::vector<results::Result>& results) {
  write_csv_header(out);
  for (const results::Result& result : results) write_csv_row(out, result);
}

}  // namespace dtsim::reports
