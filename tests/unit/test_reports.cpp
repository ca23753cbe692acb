// Renderers of result records: a Result built by hand (no engine) rendered as JSON, CSV, text and
// Chrome trace. Expected values are the inputs themselves: reports compute nothing except the two
// breakdown sums (compute = forward + backward + recompute; exposed comm = the four exposed parts).
#include <sstream>
#include <string>
#include <vector>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "config/scenario_loader.hpp"
#include "core/errors.hpp"
#include "reports/reports.hpp"

namespace {

using dtsim::config::Scenario;
using dtsim::results::Result;

Scenario sample_scenario() {
  Scenario s;
  s.source = "unit.json";
  s.name = "unit-gpt";
  s.model.preset = "gpt3-1.3b";
  s.model.layers = 24;
  s.model.hidden_size = 2048;
  s.model.heads = 16;
  s.model.kv_heads = 16;
  s.model.ffn_hidden_size = 8192;
  s.model.vocab_size = 51200;
  s.model.seq_length = 2048;
  s.cluster.node_id = "dgx-a100";
  s.cluster.nodes = 4;
  s.cluster.network.fabric = "ib-hdr";
  s.cluster.network.nic_gbps = 200.0;
  s.cluster.network.nics_per_node = 8;
  s.cluster.network.oversubscription = 2.0;
  s.parallelism.data = 4;
  s.parallelism.tensor = 2;
  s.parallelism.pipeline = 4;
  s.parallelism.zero_stage = 1;
  s.training.global_batch_size = 512;
  s.training.micro_batch_size = 2;
  s.training.bucket_bytes = 25e6;
  s.simulation.seed = 7;
  s.gpu.id = "a100-sxm4-80gb";
  s.gpu.hbm_bytes = 80e9;
  s.node.id = "dgx-a100";
  s.node.gpu = "a100-sxm4-80gb";
  s.node.gpus_per_node = 8;
  s.fabric.id = "ib-hdr";
  return s;
}

Result sample_result() {
  Result r;
  r.scenario = sample_scenario();
  r.iteration_time_s = 2.0;
  r.throughput = {.samples_per_s = 256.0, .tokens_per_s = 524288.0};
  r.flops = {.model_tflops_per_gpu = 120.5,
             .hardware_tflops_per_gpu = 150.25,
             .mfu = 0.386,
             .hfu = 0.4816,
             .peak_tflops_per_gpu = 312.0};
  r.breakdown = {.forward_s = 0.5,
                 .backward_s = 1.0,
                 .recompute_s = 0.125,
                 .optimizer_s = 0.0625,
                 .exposed_tensor_comm_s = 0.03125,
                 .exposed_context_comm_s = 0.0,
                 .exposed_pipeline_comm_s = 0.015625,
                 .exposed_data_comm_s = 0.0078125,
                 .pipeline_bubble_s = 0.2578125};
  r.memory = {.weights_bytes = 1e9,
              .gradients_bytes = 2e9,
              .optimizer_bytes = 3e9,
              .activations_bytes = 4e9,
              .buffers_bytes = 5e8,
              .peak_bytes_per_gpu = 1.05e10,
              .capacity_bytes_per_gpu = 8e10,
              .fits = true};
  r.engine = {.events = 12345, .tasks = 678, .simulated_ranks = 4, .wall_s = 0.25};
  return r;
}

Result sample_result_with_trace() {
  Result r = sample_result();
  dtsim::results::Trace t;
  t.rank_names = {"stage 0", "stage 1"};
  t.tracks = {
      {.rank = 0, .name = "compute"}, {.rank = 0, .name = "data_comm"}, {.rank = 1, .name = "compute"}};
  t.labels = {"fwd \"attn\"", "allreduce"};
  t.spans = {
      {.track = 0,
       .label = 0,
       .category = dtsim::graph::Category::forward,
       .micro_batch = 3,
       .start_ns = 1500,
       .end_ns = 4000},
      {.track = 1,
       .label = 1,
       .category = dtsim::graph::Category::data_comm,
       .micro_batch = -1,
       .start_ns = 5000,
       .end_ns = 9000},
      {.track = 2,
       .label = 0,
       .category = dtsim::graph::Category::forward,
       .micro_batch = 0,
       .start_ns = 0,
       .end_ns = 1},
  };
  r.trace = t;
  return r;
}

std::vector<std::string> keys(const nlohmann::ordered_json& j) {
  std::vector<std::string> out;
  for (const auto& item : j.items()) out.push_back(item.key());
  return out;
}

// RFC 4180 records: fields split on commas outside quotes, "" inside quotes is one quote.
std::vector<std::vector<std::string>> parse_csv(const std::string& text) {
  std::vector<std::vector<std::string>> rows(1, std::vector<std::string>(1));
  bool quoted = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
        rows.back().back() += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        rows.back().back() += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      rows.back().emplace_back();
    } else if (c == '\n') {
      rows.emplace_back(1);
    } else {
      rows.back().back() += c;
    }
  }
  if (rows.back().size() == 1 && rows.back()[0].empty()) rows.pop_back();  // after the final LF
  return rows;
}

}  // namespace

TEST_CASE("scenario_json writes the resolved scenario in Scenario v1 form") {
  const nlohmann::ordered_json j = dtsim::reports::scenario_json(sample_scenario());
  CHECK(keys(j) == std::vector<std::string>{"schema_version", "name", "model", "cluster", "parallelism",
                                            "training", "simulation"});
  CHECK(j["schema_version"] == 1);
  CHECK(j["name"] == "unit-gpt");
  CHECK(j["model"]["kind"] == "transformer");
  CHECK(j["model"]["preset"] == "gpt3-1.3b");
  CHECK(j["model"]["layers"] == 24);
  CHECK(j["model"]["mlp"] == "gelu");
  CHECK(j["model"]["attention"] == "flash");
  CHECK(j["model"]["tied_embeddings"] == false);
  CHECK(j["cluster"]["node"] == "dgx-a100");
  CHECK(j["cluster"]["nodes"] == 4);
  CHECK(j["cluster"]["gpus"] == 32);  // 4 nodes x 8 GPUs per node
  CHECK(j["cluster"]["gpu"] == "a100-sxm4-80gb");
  CHECK(j["cluster"]["network"]["fabric"] == "ib-hdr");
  CHECK(j["cluster"]["network"]["nic_gbps"] == 200.0);
  CHECK(j["cluster"]["network"]["nics_per_node"] == 8);
  CHECK(j["cluster"]["network"]["topology"]["kind"] == "fat-tree");
  CHECK(j["cluster"]["network"]["topology"]["oversubscription"] == 2.0);
  CHECK(keys(j["parallelism"]) == std::vector<std::string>{"data", "tensor", "pipeline", "virtual_stages",
                                                           "sequence_parallel", "context", "expert",
                                                           "zero_stage", "distributed_optimizer",
                                                           "tp_comm_overlap", "tp_backward_overlap", "order",
                                                           "pipeline_comm", "schedule"});
  CHECK(j["parallelism"]["schedule"] == "1f1b");
  CHECK(j["parallelism"]["zero_stage"] == 1);
  CHECK(j["training"]["precision"] == "bf16");
  CHECK(j["training"]["activation_recompute"] == "none");
  CHECK(j["training"]["bucket_mb"] == 25.0);  // 25e6 bytes in decimal megabytes
  CHECK(j["simulation"]["network"] == "analytic");
  CHECK(j["simulation"]["ranks"] == "symmetric");
  CHECK(j["simulation"]["seed"] == 7);
}

TEST_CASE("scenario_json names a preset only when the model came from one") {
  Scenario s = sample_scenario();
  s.model.preset.clear();
  s.parallelism.schedule = dtsim::config::Schedule::interleaved;
  const nlohmann::ordered_json j = dtsim::reports::scenario_json(s);
  CHECK_FALSE(j["model"].contains("preset"));
  CHECK(j["parallelism"]["schedule"] == "interleaved");
}

TEST_CASE("scenario_json writes the FP8 recipe of an FP8 run only") {
  Scenario s = sample_scenario();
  CHECK_FALSE(dtsim::reports::scenario_json(s)["training"].contains("fp8_recipe"));
  s.training.precision = dtsim::config::Precision::fp8;
  s.training.fp8_recipe = dtsim::config::Fp8Recipe::tensorwise;
  CHECK(dtsim::reports::scenario_json(s)["training"]["fp8_recipe"] == "tensorwise");
}

TEST_CASE("scenario_json writes the ZeRO-3 block with stage 3, and a loader reads it back") {
  Scenario s = sample_scenario();
  CHECK_FALSE(dtsim::reports::scenario_json(s)["parallelism"].contains("zero3"));  // stage 1
  s.parallelism.zero_stage = 3;
  s.parallelism.zero3 = {dtsim::config::Zero3Fetch::on_demand, dtsim::config::Zero3Granularity::tensor,
                         dtsim::config::CollectiveBuffers::list, 2e5};
  const nlohmann::ordered_json parallelism = dtsim::reports::scenario_json(s)["parallelism"];
  CHECK(parallelism["zero3"] == nlohmann::ordered_json{{"fetch", "on_demand"},
                                                       {"granularity", "tensor"},
                                                       {"buffers", "list"},
                                                       {"persistence_threshold", 2e5}});
  nlohmann::json scenario = nlohmann::json::parse(R"({"schema_version": 1, "name": "echo",
      "model": {"preset": "gpt-1.3b"}, "cluster": {"node": "dgx-a100", "nodes": 2},
      "training": {"global_batch_size": 32}})");
  scenario["parallelism"] = {{"data", 16}, {"zero_stage", 3}, {"zero3", parallelism["zero3"]}};
  const auto loaded =
      dtsim::config::load_scenario_text(scenario.dump(), "echo", dtsim::config::default_data_paths());
  CHECK(loaded.parallelism.zero3 == s.parallelism.zero3);
}

TEST_CASE("result_json writes Result v1 with every field of the record") {
  const nlohmann::ordered_json j = dtsim::reports::result_json(sample_result());
  CHECK(keys(j) == std::vector<std::string>{"schema_version", "dtsim_version", "scenario", "status", "reason",
                                            "iteration_time_s", "throughput", "flops", "breakdown_s",
                                            "memory", "engine"});
  CHECK(j["schema_version"] == 1);
  CHECK(j["dtsim_version"].is_string());
  CHECK(j["scenario"] == dtsim::reports::scenario_json(sample_scenario()));
  CHECK(j["status"] == "ok");
  CHECK(j["reason"].is_null());
  CHECK(j["iteration_time_s"] == 2.0);
  CHECK(j["throughput"]["samples_per_s"] == 256.0);
  CHECK(j["throughput"]["tokens_per_s"] == 524288.0);
  CHECK(j["flops"]["model_tflops_per_gpu"] == 120.5);
  CHECK(j["flops"]["hardware_tflops_per_gpu"] == 150.25);
  CHECK(j["flops"]["mfu"] == 0.386);
  CHECK(j["flops"]["hfu"] == 0.4816);
  CHECK(j["flops"]["peak_tflops_per_gpu"] == 312.0);

  const auto& b = j["breakdown_s"];
  CHECK(keys(b) ==
        std::vector<std::string>{"forward", "backward", "recompute", "optimizer", "exposed_tensor_comm",
                                 "exposed_context_comm", "exposed_pipeline_comm", "exposed_data_comm",
                                 "exposed_embedding_comm", "exposed_expert_comm", "pipeline_bubble",
                                 "host_wait", "data_stall", "compute", "exposed_comm"});
  CHECK(b["forward"] == 0.5);
  CHECK(b["pipeline_bubble"] == 0.2578125);
  CHECK(b["compute"] == 1.625);           // 0.5 + 1.0 + 0.125, exact in binary
  CHECK(b["exposed_comm"] == 0.0546875);  // 0.03125 + 0 + 0.015625 + 0.0078125, exact in binary

  const auto& m = j["memory"];
  CHECK(keys(m) == std::vector<std::string>{"weights_bytes", "gradients_bytes", "optimizer_bytes",
                                            "activations_bytes", "buffers_bytes", "peak_bytes_per_gpu",
                                            "capacity_bytes_per_gpu", "fits"});
  CHECK(m["peak_bytes_per_gpu"] == 1.05e10);
  CHECK(m["capacity_bytes_per_gpu"] == 8e10);
  CHECK(m["fits"] == true);

  CHECK(j["engine"]["events"] == 12345);
  CHECK(j["engine"]["tasks"] == 678);
  CHECK(j["engine"]["simulated_ranks"] == 4);
  CHECK(j["engine"]["wall_s"] == 0.25);
}

TEST_CASE("result_json gives the reason of an infeasible result") {
  Result r = sample_result();
  r.status = dtsim::results::Status::infeasible;
  r.reason = "needs 95.1 GiB per GPU, has 80 GiB";
  const nlohmann::ordered_json j = dtsim::reports::result_json(r);
  CHECK(j["status"] == "infeasible");
  CHECK(j["reason"] == "needs 95.1 GiB per GPU, has 80 GiB");
}

TEST_CASE("write_json is deterministic and parses back to result_json") {
  const Result r = sample_result();
  std::ostringstream first;
  std::ostringstream second;
  dtsim::reports::write_json(first, r);
  dtsim::reports::write_json(second, r);
  CHECK(first.str() == second.str());
  CHECK(first.str().back() == '\n');
  // Output v1's envelope (command, inputs) in front of Result v1's keys.
  nlohmann::ordered_json parsed = nlohmann::ordered_json::parse(first.str());
  CHECK(parsed["command"] == "run");
  CHECK(parsed["inputs"] == nlohmann::ordered_json::object());
  parsed.erase("command");
  parsed.erase("inputs");
  CHECK(parsed == dtsim::reports::result_json(r));

  std::ostringstream via_dispatch;
  dtsim::reports::write_result(via_dispatch, r, dtsim::reports::Format::json);
  CHECK(via_dispatch.str() == first.str());
}

TEST_CASE("write_csv writes a header and one row per result, quoted as RFC 4180 says") {
  Result quoted = sample_result();
  quoted.scenario.name = "a,b \"c\"";
  quoted.status = dtsim::results::Status::infeasible;
  quoted.reason = "line one\nline two";
  std::ostringstream out;
  dtsim::reports::write_csv(out, {sample_result(), quoted});

  const auto rows = parse_csv(out.str());
  REQUIRE(rows.size() == 3);
  const auto& header = rows[0];
  CHECK(rows[1].size() == header.size());
  CHECK(rows[2].size() == header.size());
  auto column = [&](const std::string& name) {
    for (std::size_t i = 0; i < header.size(); ++i)
      if (header[i] == name) return i;
    FAIL("no column " << name);
    return header.size();
  };
  CHECK(header.front() == "name");
  CHECK(rows[1][column("name")] == "unit-gpt");
  CHECK(rows[1][column("status")] == "ok");
  CHECK(rows[1][column("reason")].empty());
  CHECK(rows[1][column("gpus")] == "32");
  CHECK(rows[1][column("data")] == "4");
  CHECK(rows[1][column("tensor")] == "2");
  CHECK(rows[1][column("pipeline")] == "4");
  CHECK(rows[1][column("schedule")] == "1f1b");
  CHECK(rows[1][column("iteration_time_s")] == "2");
  CHECK(rows[1][column("mfu")] == "0.386");
  CHECK(rows[1][column("compute_s")] == "1.625");
  CHECK(rows[1][column("exposed_comm_s")] == "0.0546875");
  CHECK(rows[1][column("peak_bytes_per_gpu")] == "10500000000");
  CHECK(rows[1][column("fits")] == "true");
  CHECK(rows[2][column("name")] == "a,b \"c\"");
  CHECK(rows[2][column("status")] == "infeasible");
  CHECK(rows[2][column("reason")] == "line one\nline two");
  CHECK(out.str().find("\"a,b \"\"c\"\"\"") != std::string::npos);

  std::ostringstream one;
  dtsim::reports::write_result(one, sample_result(), dtsim::reports::Format::csv);
  std::ostringstream one_as_list;
  dtsim::reports::write_csv(one_as_list, {sample_result()});
  CHECK(one.str() == one_as_list.str());
}

TEST_CASE("write_text summarizes the scenario and the result") {
  std::ostringstream out;
  dtsim::reports::write_text(out, sample_result());
  const std::string text = out.str();
  CHECK(text.find("unit-gpt") != std::string::npos);
  CHECK(text.find("4 x dgx-a100 = 32 GPUs") != std::string::npos);
  CHECK(text.find("DP 4 x TP 2 x PP 4 x CP 1") != std::string::npos);
  CHECK(text.find("2.000000 s") != std::string::npos);
  CHECK(text.find("MFU 38.6%, HFU 48.2%") != std::string::npos);
  CHECK(text.find("25.0%") != std::string::npos);  // forward: 0.5 s of 2 s
  CHECK(text.find("fits: yes") != std::string::npos);
  CHECK(text.find("12345 events") != std::string::npos);

  Result infeasible = sample_result();
  infeasible.status = dtsim::results::Status::infeasible;
  infeasible.reason = "out of memory";
  infeasible.memory.fits = false;
  std::ostringstream out2;
  dtsim::reports::write_result(out2, infeasible, dtsim::reports::Format::text);
  CHECK(out2.str().find("infeasible: out of memory") != std::string::npos);
  CHECK(out2.str().find("fits: no") != std::string::npos);

  // Refused before the memory model and the engine ran: neither block, only the reason.
  Result refused;
  refused.scenario = infeasible.scenario;
  refused.status = dtsim::results::Status::infeasible;
  refused.reason = "heads 8 are not divisible by tensor parallel 16";
  std::ostringstream out3;
  dtsim::reports::write_result(out3, refused, dtsim::reports::Format::text);
  CHECK(out3.str().find("infeasible: heads 8") != std::string::npos);
  CHECK(out3.str().find("memory per GPU") == std::string::npos);
  CHECK(out3.str().find("events") == std::string::npos);
}

TEST_CASE("write_chrome_trace writes metadata per rank and track and one complete event per span") {
  const Result r = sample_result_with_trace();
  std::ostringstream out;
  dtsim::reports::write_chrome_trace(out, r);
  const nlohmann::json j = nlohmann::json::parse(out.str());
  CHECK(j["displayTimeUnit"] == "ns");
  const auto& events = j["traceEvents"];
  // 2 ranks x (process_name, process_sort_index) + 3 tracks x (thread_name, thread_sort_index) + 3 spans
  REQUIRE(events.size() == 13);

  std::vector<nlohmann::json> process_names;
  std::vector<nlohmann::json> thread_names;
  std::vector<nlohmann::json> spans;
  for (const auto& e : events) {
    if (e["ph"] == "M" && e["name"] == "process_name") process_names.push_back(e);
    if (e["ph"] == "M" && e["name"] == "thread_name") thread_names.push_back(e);
    if (e["ph"] == "X") spans.push_back(e);
  }
  REQUIRE(process_names.size() == 2);
  CHECK(process_names[1]["pid"] == 1);
  CHECK(process_names[1]["args"]["name"] == "stage 1");
  REQUIRE(thread_names.size() == 3);
  CHECK(thread_names[1]["pid"] == 0);
  CHECK(thread_names[1]["tid"] == 1);
  CHECK(thread_names[1]["args"]["name"] == "data_comm");
  CHECK(thread_names[2]["pid"] == 1);
  CHECK(thread_names[2]["tid"] == 2);

  REQUIRE(spans.size() == 3);
  CHECK(spans[0]["name"] == "fwd \"attn\" mb3");
  CHECK(spans[0]["cat"] == "forward");
  CHECK(spans[0]["pid"] == 0);
  CHECK(spans[0]["tid"] == 0);
  CHECK(spans[0]["ts"] == 1.5);   // 1500 ns
  CHECK(spans[0]["dur"] == 2.5);  // 4000 - 1500 ns
  CHECK(spans[1]["name"] == "allreduce");
  CHECK(spans[1]["cat"] == "data_comm");
  CHECK(spans[1]["tid"] == 1);
  CHECK(spans[2]["pid"] == 1);
  CHECK(spans[2]["dur"] == 0.001);  // 1 ns
}

TEST_CASE("write_chrome_trace writes a valid empty trace and refuses a result without one") {
  Result r = sample_result();
  r.trace = dtsim::results::Trace{};
  std::ostringstream out;
  dtsim::reports::write_chrome_trace(out, r);
  CHECK(nlohmann::json::parse(out.str())["traceEvents"].empty());

  std::ostringstream none;
  CHECK_THROWS_AS(dtsim::reports::write_chrome_trace(none, sample_result()), dtsim::core::InternalError);
}
