// The command line, driven in-process through run_cli(): exit statuses (0 ok, 2 bad input or usage),
// help and version on the output stream, nothing on the output stream or in files after an error, and
// byte-identical reports for repeated runs of scenarios/default.json with --no-timing.
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "cli/cli.hpp"
#include "cli_fixture.hpp"

namespace {

using Outcome = dtsim::testing::CliOutcome;
using dtsim::testing::kDefaultScenario;
using dtsim::testing::read_file;
using dtsim::testing::run_dtsim;
using dtsim::testing::scratch_dir;

}  // namespace

TEST_CASE("--version prints the version and exits 0") {
  const Outcome o = run_dtsim({"--version"});
  CHECK(o.status == dtsim::cli::kExitOk);
  CHECK(o.out.rfind("dtsim ", 0) == 0);
  CHECK(o.out.back() == '\n');
  CHECK(o.err.empty());
}

TEST_CASE("--help prints help to the output stream for dtsim and each subcommand") {
  const Outcome top = run_dtsim({"--help"});
  CHECK(top.status == dtsim::cli::kExitOk);
  CHECK(top.out.find("run") != std::string::npos);
  CHECK(top.out.find("check") != std::string::npos);
  CHECK(top.err.empty());

  const Outcome run_help = run_dtsim({"run", "--help"});
  CHECK(run_help.status == dtsim::cli::kExitOk);
  CHECK(run_help.out.find("--format") != std::string::npos);
  CHECK(run_help.out.find("--trace") != std::string::npos);
  CHECK(run_help.out.find("--no-timing") != std::string::npos);

  const Outcome check_help = run_dtsim({"check", "--help"});
  CHECK(check_help.status == dtsim::cli::kExitOk);
  CHECK(check_help.out.find("scenario") != std::string::npos);
}

TEST_CASE("bad usage exits 2 with a message on the error stream and nothing on the output stream") {
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {},                                     // no subcommand
           {"frobnicate"},                         // unknown subcommand
           {"run"},                                // missing scenario
           {"run", "x.json", "--format", "yaml"},  // bad format
           {"run", "x.json", "--unknown-option"},  // unknown option
           {"check", "x.json", "y.json"},          // extra argument
           {"run", "x.json", "--out"},             // option without its value
       }) {
    std::string command_line;
    for (const std::string& arg : args) command_line += arg + " ";
    CAPTURE(command_line);
    const Outcome o = run_dtsim(args);
    CHECK(o.status == dtsim::cli::kExitBadInput);
    CHECK(o.out.empty());
    CHECK_FALSE(o.err.empty());
  }
}

TEST_CASE("an unreadable or malformed scenario exits 2 with an error naming it") {
  const Outcome missing = run_dtsim({"run", "/nonexistent/dtsim/scenario.json"});
  CHECK(missing.status == dtsim::cli::kExitBadInput);
  CHECK(missing.out.empty());
  CHECK(missing.err.rfind("error: ", 0) == 0);
  CHECK(missing.err.find("/nonexistent/dtsim/scenario.json") != std::string::npos);

  const Outcome malformed = run_dtsim({"check", "-"}, "{ not json");
  CHECK(malformed.status == dtsim::cli::kExitBadInput);
  CHECK(malformed.out.empty());
  CHECK(malformed.err.rfind("error: ", 0) == 0);
}

TEST_CASE("check validates scenarios/default.json") {
  REQUIRE(std::filesystem::exists(kDefaultScenario));
  const Outcome o = run_dtsim({"check", kDefaultScenario});
  CHECK(o.status == dtsim::cli::kExitOk);
  CHECK(o.out.rfind("ok: " + kDefaultScenario + ": ", 0) == 0);
  CHECK(o.out.find(" GPUs") != std::string::npos);
  CHECK(o.err.empty());
}

TEST_CASE("run with --no-timing gives identical bytes on repeated runs, in every format") {
  REQUIRE(std::filesystem::exists(kDefaultScenario));
  for (const std::string format : {"text", "json", "csv"}) {
    CAPTURE(format);
    const Outcome first = run_dtsim({"run", kDefaultScenario, "--format", format, "--no-timing"});
    const Outcome second = run_dtsim({"run", kDefaultScenario, "--format", format, "--no-timing"});
    CHECK(first.status == dtsim::cli::kExitOk);
    CHECK(first.err.empty());
    CHECK_FALSE(first.out.empty());
    CHECK(first.out == second.out);
  }
}

TEST_CASE("run writes Result v1 JSON whether the scenario comes from a file or from stdin") {
  REQUIRE(std::filesystem::exists(kDefaultScenario));
  const Outcome from_file = run_dtsim({"run", kDefaultScenario, "--format", "json", "--no-timing"});
  REQUIRE(from_file.status == dtsim::cli::kExitOk);
  auto j = nlohmann::json::parse(from_file.out);
  // Output v1's envelope, then Result v1's keys.
  CHECK(j["schema_version"] == 1);
  CHECK(j["command"] == "run");
  CHECK(j["inputs"]["scenario"] == kDefaultScenario);
  CHECK(j["status"] == "ok");
  CHECK(j["reason"].is_null());
  CHECK(j["iteration_time_s"].get<double>() > 0.0);
  CHECK(j["engine"]["wall_s"] == 0.0);

  const Outcome from_stdin =
      run_dtsim({"run", "-", "--format", "json", "--no-timing"}, read_file(kDefaultScenario));
  CHECK(from_stdin.status == dtsim::cli::kExitOk);
  // The same but for the input's name.
  auto k = nlohmann::json::parse(from_stdin.out);
  CHECK(k["inputs"]["scenario"] == "-");
  j.erase("inputs");
  k.erase("inputs");
  CHECK(k == j);
}

TEST_CASE("run --out and --trace write files instead of the output stream") {
  REQUIRE(std::filesystem::exists(kDefaultScenario));
  const auto dir = scratch_dir("cli_files");
  const auto report = dir / "result.json";
  const auto trace = dir / "trace.json";
  const Outcome o = run_dtsim({"run", kDefaultScenario, "--format", "json", "--no-timing", "--out",
                               report.string(), "--trace", trace.string()});
  CHECK(o.status == dtsim::cli::kExitOk);
  CHECK(o.out.empty());
  const Outcome to_stream = run_dtsim({"run", kDefaultScenario, "--format", "json", "--no-timing"});
  CHECK(read_file(report) == to_stream.out);

  const auto t = nlohmann::json::parse(read_file(trace));
  CHECK(t["displayTimeUnit"] == "ns");
  bool has_span = false;
  for (const auto& e : t["traceEvents"]) has_span = has_span || e["ph"] == "X";
  CHECK(has_span);
  std::filesystem::remove_all(dir);
}

TEST_CASE("run writes no file when one output cannot be written") {
  REQUIRE(std::filesystem::exists(kDefaultScenario));
  const auto dir = scratch_dir("cli_unwritable");
  const auto trace = dir / "trace.json";
  const Outcome o = run_dtsim({"run", kDefaultScenario, "--out", (dir / "missing" / "result.txt").string(),
                               "--trace", trace.string()});
  CHECK(o.status == dtsim::cli::kExitBadInput);
  CHECK(o.out.empty());
  CHECK(o.err.rfind("error: ", 0) == 0);
  CHECK_FALSE(std::filesystem::exists(trace));
  std::filesystem::remove_all(dir);
}

TEST_CASE("run states the error band of the closest validated regime, in text, JSON and CSV") {
  // The demo: A100, 2 nodes, no software stack: the A100 several-node regime with the most rows
  // (hardware_profiles/accuracy.json), matched on GPU and scale.
  const Outcome text = run_dtsim({"run", kDefaultScenario, "--no-timing"});
  REQUIRE(text.status == dtsim::cli::kExitOk);
  CHECK(text.out.find("error band   ") != std::string::npos);
  CHECK(text.out.find("same GPU and scale") != std::string::npos);
  const Outcome json = run_dtsim({"run", kDefaultScenario, "--format", "json", "--no-timing"});
  const auto e = nlohmann::json::parse(json.out)["expected_error"];
  CHECK(e["validated"] == true);
  CHECK(e["match"] == "GPU and scale");
  CHECK(e["iteration_time_low_pct"].get<double>() < e["iteration_time_high_pct"].get<double>());
  const Outcome csv = run_dtsim({"run", kDefaultScenario, "--format", "csv", "--no-timing"});
  CHECK(csv.out.find("expected_error_low_pct,expected_error_high_pct") != std::string::npos);
}

TEST_CASE("an infeasible plan exits 3 and still writes its result") {
  REQUIRE(std::filesystem::exists(kDefaultScenario));
  // A 175B-parameter model replicated on every GPU (data parallel only, ZeRO-0) needs about 16 bytes of
  // weights, gradients and Adam states per parameter, 2.8 TB per GPU: no GPU holds that.
  nlohmann::json scenario = nlohmann::json::parse(read_file(kDefaultScenario));
  scenario["model"] = {{"preset", "gpt3-175b"}};
  scenario["parallelism"] = {{"tensor", 1}, {"pipeline", 1}, {"zero_stage", 0}};  // data: all the GPUs
  const Outcome o = run_dtsim({"run", "-", "--format", "json", "--no-timing"}, scenario.dump());
  CHECK(o.status == dtsim::cli::kExitInfeasible);
  const auto j = nlohmann::json::parse(o.out);
  CHECK(j["status"] == "infeasible");
  CHECK(j["reason"].is_string());
  CHECK(j["memory"]["fits"] == false);
  CHECK(o.err.rfind("infeasible: ", 0) == 0);
}

TEST_CASE("degrees that do not multiply to the cluster's GPUs: an infeasible result with the reason, exit 3") {
  // Tensor 3 on 2 DGX A100 (16 GPUs): data, not given, takes 16 / 3 = 5; 5 x 3 = 15 is not 16. Data 2 x
  // tensor 4 = 8 is not 16 either. Neither is bad input: the plan cannot run, as an indivisible batch.
  nlohmann::json scenario = nlohmann::json::parse(read_file(kDefaultScenario));
  for (const auto& [parallelism, reason] :
       {std::pair{nlohmann::json{{"tensor", 3}}, "data x tensor x pipeline x context = 5 x 3 x 1 x 1 = 15 is not "
                                                 "the cluster's 16 GPUs (2 nodes x 8 GPUs)"},
        std::pair{nlohmann::json{{"data", 2}, {"tensor", 4}},
                  "data x tensor x pipeline x context = 2 x 4 x 1 x 1 = 8 is not the cluster's 16 GPUs"}}) {
    scenario["parallelism"] = parallelism;
    const Outcome o = run_dtsim({"run", "-", "--format", "json", "--no-timing"}, scenario.dump());
    CHECK(o.status == dtsim::cli::kExitInfeasible);
    const auto j = nlohmann::json::parse(o.out);
    CHECK(j["status"] == "infeasible");
    CHECK(j["reason"].get<std::string>().find(reason) == 0);
  }
}

TEST_CASE("nccl-tests: a collective beyond the engine's clock exits 3 with the reason and no table") {
  // 1e-300 Gb/s NICs: the first row's all-reduce would take ~1e292 s, past 2^56 ns.
  const Outcome o = run_dtsim({"nccl-tests", "--node", "dgx-a100", "--nodes", "2", "--nic-gbps", "1e-300"});
  CHECK(o.status == dtsim::cli::kExitInfeasible);
  CHECK(o.out.empty());
  CHECK(o.err.rfind("infeasible: one operation would take", 0) == 0);
}

TEST_CASE("compare: one column per scenario - exit 3 when a plan is infeasible") {
  const std::string dir = std::string(DTSIM_SOURCE_DIR) + "/scenarios/";
  std::istringstream in;
  std::ostringstream out, err;
  const int ok =
      dtsim::cli::run_cli({"compare", dir + "default.json", dir + "llama2-7b-h100-32.json"}, in, out, err);
  CHECK(ok == 0);
  CHECK(out.str().find("DP x TP x PP x CP") != std::string::npos);
  CHECK(out.str().find("16x1x1x1") != std::string::npos);
  std::ostringstream out2, err2;
  const int infeasible = dtsim::cli::run_cli(
      {"compare", "--format", "json", dir + "default.json", dir + "gpt3-175b-data-parallel-only.json"}, in,
      out2, err2);
  CHECK(infeasible == 3);
  const auto doc = nlohmann::json::parse(out2.str());
  CHECK(doc["command"] == "compare");
  CHECK(doc["inputs"]["scenarios"].size() == 2);
  const auto& j = doc["results"];
  REQUIRE(j.size() == 2);
  CHECK(j[1]["status"] == "infeasible");
  std::ostringstream out3, err3;
  CHECK(dtsim::cli::run_cli({"compare", dir + "default.json", dir + "missing.json"}, in, out3, err3) == 2);
  CHECK(out3.str().empty());
}

TEST_CASE("sweep: every combination, weak scaling keeps the batch per GPU, threads do not change results") {
  const std::string scenario = std::string(DTSIM_SOURCE_DIR) + "/scenarios/default.json";
  std::istringstream in;
  const auto run = [&](std::vector<std::string> args, std::string& text) {
    std::ostringstream out, err;
    const int status = dtsim::cli::run_cli(args, in, out, err);
    text = out.str() + err.str();
    return status;
  };
  std::string text;
  // default.json: 2 nodes, data 16, global batch 512. Weak scaling over 1, 2, 4 nodes: data 8, 16, 32
  // and global batch 256, 512, 1024 (32 sequences per GPU each time), times 2 fabrics = 6 points.
  REQUIRE(run({"sweep", scenario, "--set", "/cluster/nodes=1,2,4", "--set",
               "cluster.network.fabric=efa,infiniband", "--scaling", "weak", "--jobs", "2", "--no-timing"},
              text) == 0);
  // The point lines, between the sweep's first line ({"sweep": ...}) and its last ({"sweep_complete": ...}).
  std::map<int, nlohmann::json> by_index;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    const auto j = nlohmann::json::parse(line);
    if (j.contains("index")) by_index[j["index"].get<int>()] = j;
  }
  REQUIRE(by_index.size() == 6);
  // "set": each swept pointer and its value, as JSON (the node count a number).
  CHECK(by_index[0]["set"] == nlohmann::json{{"/cluster/nodes", 1}, {"/cluster/network/fabric", "efa"}});
  CHECK(by_index[1]["set"]["/cluster/network/fabric"] == "infiniband");
  for (const auto& [index, j] : by_index) {
    const auto& s = j["result"]["scenario"];
    CHECK(s["training"]["global_batch_size"].get<int>() == 32 * s["cluster"]["gpus"].get<int>());
    CHECK(s["parallelism"]["data"] == s["cluster"]["gpus"]);
  }
  // One thread gives the same results.
  std::string single;
  REQUIRE(run({"sweep", scenario, "--set", "/cluster/nodes=1,2,4", "--set",
               "cluster.network.fabric=efa,infiniband", "--scaling", "weak", "--jobs", "1", "--no-timing"},
              single) == 0);
  std::istringstream first(single);
  for (std::string line; std::getline(first, line);) {
    const auto j = nlohmann::json::parse(line);
    if (j.contains("index")) CHECK(j == by_index[j["index"].get<int>()]);
  }
  // A malformed --set and a point that is bad input stop the sweep before anything is written.
  CHECK(run({"sweep", scenario, "--set", "nodes"}, text) == 2);
  CHECK(text.find("expected POINTER=VALUE") != std::string::npos);
  CHECK(run({"sweep", scenario, "--set", "/training/precision=bf16,fp7"}, text) == 2);
  CHECK(text.find("(sweep point /training/precision=fp7)") != std::string::npos);
  CHECK(text.find("{") == std::string::npos);
}

TEST_CASE("sweep shards merged give the same lines as one run") {
  namespace fs = std::filesystem;
  const std::string scenario = std::string(DTSIM_SOURCE_DIR) + "/scenarios/default.json";
  const fs::path dir = fs::temp_directory_path() / "dtsim_shard_test";
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::istringstream in;
  const std::vector<std::string> base{"sweep",      scenario,
                                      "--set",      "cluster.nodes=1,2,4",
                                      "--set",      "cluster.network.fabric=efa,infiniband",
                                      "--scaling",  "weak",
                                      "--no-timing"};
  std::vector<std::string> shard_files;
  for (const char* shard : {"1/2", "2/2"}) {
    auto args = base;
    const std::string file = (dir / (std::string("shard") + shard[0] + ".jsonl")).string();
    args.insert(args.end(), {"--shard", shard, "--out", file});
    std::ostringstream out, err;
    REQUIRE(dtsim::cli::run_cli(args, in, out, err) == 0);
    shard_files.push_back(file);
  }
  std::ostringstream merged, merge_err;
  REQUIRE(dtsim::cli::run_cli({"merge", shard_files[0], shard_files[1]}, in, merged, merge_err) == 0);
  auto whole_args = base;
  whole_args.insert(whole_args.end(), {"--jobs", "1"});
  std::ostringstream whole, whole_err;
  REQUIRE(dtsim::cli::run_cli(whole_args, in, whole, whole_err) == 0);
  CHECK(merged.str() == whole.str());
  // The same shard twice is a duplicate point; a bad --shard is bad input.
  std::ostringstream dup, dup_err;
  CHECK(dtsim::cli::run_cli({"merge", shard_files[0], shard_files[0]}, in, dup, dup_err) == 2);
  CHECK(dup_err.str().find("appears twice") != std::string::npos);
  auto bad = base;
  bad.insert(bad.end(), {"--shard", "3/2"});
  std::ostringstream bad_out, bad_err;
  CHECK(dtsim::cli::run_cli(bad, in, bad_out, bad_err) == 2);
  CHECK(bad_err.str().find("expected K/N with 1 <= K <= N") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("sweep: lines leave in point order, the same bytes for any --jobs") {
  // The first point (64 nodes: 512 simulated workers) costs more than the three after it, so with four
  // threads those finish first; the output must still list points 0, 1, 2, 3 in that order.
  const std::string scenario =
      std::string(DTSIM_SOURCE_DIR) + "/scenarios/ps-vs-allreduce/resnet50-64gpu-allreduce-sync.json";
  std::string first;
  for (const char* jobs : {"1", "4"}) {
    const Outcome o = run_dtsim({"sweep", scenario, "--set", "/cluster/nodes=64,1,2,4", "--scaling", "weak",
                                 "--jobs", jobs, "--no-timing"});
    REQUIRE(o.status == 0);
    if (first.empty()) {
      first = o.out;
      continue;
    }
    CHECK(o.out == first);
  }
  // The sweep's first line, points 0 to 3, the last line.
  std::istringstream lines(first);
  std::vector<nlohmann::json> parsed;
  for (std::string line; std::getline(lines, line);) parsed.push_back(nlohmann::json::parse(line));
  REQUIRE(parsed.size() == 6);
  CHECK(parsed.front()["sweep"]["points"] == 4);
  for (int i = 0; i < 4; ++i) CHECK(parsed[1 + i]["index"].get<int>() == i);
  CHECK(parsed.back() == nlohmann::json{{"sweep_complete", true}, {"points", 4}});
}

TEST_CASE("outputs that cannot be written are errors (exit 1), never a silent exit 0") {
  REQUIRE(std::filesystem::exists(kDefaultScenario));
  // An output stream that refuses every byte (as standard output on a full disk).
  std::istringstream in;
  std::ostream refusing(nullptr);
  std::ostringstream err;
  CHECK(dtsim::cli::run_cli({"run", kDefaultScenario, "--no-timing"}, in, refusing, err) ==
        dtsim::cli::kExitInternal);
  CHECK(err.str().find("error: cannot write to standard output") != std::string::npos);
  // The real process, standard output on /dev/full: exit status 1 and the message.
  const auto dir = scratch_dir("cli_dev_full");
  const std::string command =
      std::string(DTSIM_EXE) + " run " + kDefaultScenario + " > /dev/full 2> " + (dir / "err.txt").string();
  const int status = std::system(command.c_str());
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == dtsim::cli::kExitInternal);
  CHECK(read_file(dir / "err.txt").find("cannot write to standard output") != std::string::npos);
  // An import that cannot write its profile says so and does not claim to have written it.
  const Outcome import = run_dtsim(
      {"import", "nccl-tests",
       std::string(DTSIM_SOURCE_DIR) + "/tests/validation/nccl_logs/aws_p4de_2node_efa400_allreduce.log",
       "--node", "aws-p4d", "--nodes", "2", "--id", "x", "--out", "/dev/full"});
  CHECK(import.status == dtsim::cli::kExitInternal);
  CHECK(import.out.find("wrote") == std::string::npos);
  CHECK(import.err.find("cannot write /dev/full") != std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST_CASE("an output that names an input, or another output, is refused before anything runs") {
  const auto dir = scratch_dir("cli_same_file");
  const auto copy = dir / "scenario.json";
  std::filesystem::copy_file(kDefaultScenario, copy);
  const std::string before = read_file(copy);
  // The same file by another path (a link): refused, and the scenario is untouched.
  std::filesystem::create_symlink(copy, dir / "link.json");
  Outcome o = run_dtsim({"run", copy.string(), "--out", (dir / "link.json").string()});
  CHECK(o.status == dtsim::cli::kExitBadInput);
  CHECK(o.err.find("/out: got \"") != std::string::npos);
  CHECK(o.err.find("the same file as the input") != std::string::npos);
  CHECK(read_file(copy) == before);
  o = run_dtsim(
      {"run", copy.string(), "--out", (dir / "a.json").string(), "--trace", (dir / "." / "a.json").string()});
  CHECK(o.status == dtsim::cli::kExitBadInput);
  CHECK(o.err.find("the same file as --out") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(dir / "a.json"));
  // Devices may repeat: both outputs to /dev/null.
  CHECK(run_dtsim({"run", copy.string(), "--out", "/dev/null", "--trace", "/dev/null"}).status ==
        dtsim::cli::kExitOk);
  std::filesystem::remove_all(dir);
}

TEST_CASE("run and nccl-tests say when a fitted fabric is used past the node counts it was fitted on") {
  // The shipped efa profile was fitted on one 2-node log (hardware_profiles/fabrics/efa.json, fitted_on).
  const std::string scenario = std::string(DTSIM_SOURCE_DIR) + "/scenarios/llama2-13b-p4d-efa.json";
  const Outcome run = run_dtsim({"run", scenario, "--no-timing"});
  CHECK(run.status == dtsim::cli::kExitOk);
  CHECK(run.out.find("extrapolated: fabric efa was fitted on 2 nodes and 8 B to 2 GiB; 16 nodes leave that range") !=
        std::string::npos);
  const Outcome two = run_dtsim({"nccl-tests", "--node", "aws-p4d", "--nodes", "2", "-b", "8", "-e", "1G"});
  CHECK(two.status == dtsim::cli::kExitOk);
  CHECK(two.out.find("extrapolated") == std::string::npos);
  const Outcome many = run_dtsim({"nccl-tests", "--node", "aws-p4d", "--nodes", "128", "--format", "json"});
  CHECK(many.status == dtsim::cli::kExitOk);
  CHECK(many.out.find("\"note\": \"extrapolated: fabric efa was fitted on 2 nodes") != std::string::npos);
}
