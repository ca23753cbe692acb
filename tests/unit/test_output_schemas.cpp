// Output v1 (docs/scenario-and-result.md): what every command writes as JSON validates against its
// schema in schemas/, over workloads that exercise each optional block (transformers, FP8, ZeRO-3,
// stragglers on a rail-optimized fabric, layer-table data-parallel training, a measured one-GPU rate,
// failures and goodput, an infeasible plan); the shipped scenarios, plans, hardware profiles, presets and
// a profile dtsim fits validate against the input schemas; and `dtsim schema` prints those files.
#include <doctest/doctest.h>

#include <filesystem>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/cli.hpp"
#include "cli_fixture.hpp"
#include "json_schema_check.hpp"

namespace {

using dtsim::testing::run_dtsim;

const std::string kSource = DTSIM_SOURCE_DIR;

dtsim::test::SchemaChecker& checker() {
  static dtsim::test::SchemaChecker c(kSource + "/schemas");
  return c;
}

void expect_valid(const std::string& json_text, const std::string& schema, const std::string& what) {
  CAPTURE(what);
  const nlohmann::json doc = nlohmann::json::parse(json_text);
  const std::vector<std::string> errors = checker().check(doc, schema + ".schema.json");
  std::string all;
  for (std::size_t i = 0; i < errors.size() && i < 8; ++i) all += errors[i] + "\n";
  CHECK_MESSAGE(errors.empty(), all);
}

std::string scenario(const std::string& relative) { return kSource + "/scenarios/" + relative; }

}  // namespace

TEST_CASE("Output v1: run's JSON validates against output-run, for each kind of workload and result") {
  for (const std::string s :
       {"default.json", "llama3-70b-h100-512.json", "gpt3-175b-data-parallel-only.json",
        "gpt-1.3b-1024-a100-fat-tree-flow.json", "failures/llama3-405b-16k-h100-failures.json",
        "ps-vs-allreduce/resnet50-64gpu-ps-bounded-stragglers.json",
        "ps-vs-allreduce/inception-v3-64-p100-tcp-measured-gpu.json", "bert-large-256-p3dn-efa.json",
        "dlrm-criteo-1tb-p4d.json", "dlrm-1tb/host-cached.json", "dlrm-1tb/hbm-data-parallel.json"}) {
    const auto o = run_dtsim({"run", scenario(s), "--format", "json", "--no-timing"});
    REQUIRE((o.status == 0 || o.status == 3));
    expect_valid(o.out, "output-run", s);
  }
  // Keys the scenario echo writes only for some plans: FP8 and its recipe, SGD, ZeRO-3's block, a
  // rail-optimized fabric with a core tier, stragglers in an every-rank simulation.
  const std::string fp8 = R"({"schema_version": 1, "name": "fp8", "model": {"preset": "llama3-8b"},
    "cluster": {"node": "dgx-h100", "nodes": 1, "speed_factors": [{"node": 0, "gpu": 3, "compute": 0.5}],
                "network": {"fabric": "infiniband", "topology": {"kind": "rail-optimized", "nodes_per_leaf": 1,
                            "oversubscription": 2.0, "leaves_per_pod": 1, "core_oversubscription": 2.0}}},
    "parallelism": {"data": 8, "zero_stage": 3},
    "training": {"global_batch_size": 16, "micro_batch_size": 1, "precision": "fp8", "fp8_recipe": "tensorwise",
                 "optimizer": "sgd"},
    "simulation": {"ranks": "all"}})";
  const auto o = run_dtsim({"run", "-", "--format", "json", "--no-timing"}, fp8);
  REQUIRE_MESSAGE((o.status == 0 || o.status == 3), o.err);
  expect_valid(o.out, "output-run", "fp8, zero-3, stragglers");
  // An inline multi-layer perceptron.
  const std::string mlp = R"({"schema_version": 1, "name": "mlp", "model": {"kind": "mlp", "layers": 4,
    "hidden_size": 1024, "input_size": 784, "output_size": 10}, "cluster": {"node": "dgx-a100", "nodes": 1},
    "training": {"global_batch_size": 256, "micro_batch_size": 32}})";
  const auto m = run_dtsim({"run", "-", "--format", "json", "--no-timing"}, mlp);
  REQUIRE_MESSAGE(m.status == 0, m.err);
  expect_valid(m.out, "output-run", "mlp");
}

TEST_CASE("Output v1: every shipped scenario's run validates against output-run") {
  std::size_t n = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(kSource + "/scenarios")) {
    const std::string path = entry.path().string();
    if (entry.path().extension() != ".json" || path.find("/scenarios/plans/") != std::string::npos) continue;
    const auto o = run_dtsim({"run", path, "--format", "json", "--no-timing"});
    REQUIRE_MESSAGE((o.status == 0 || o.status == 3), path << ": " << o.err);
    expect_valid(o.out, "output-run", path);
    ++n;
  }
  CHECK(n >= 40);
}

TEST_CASE("Output v1: compare, search, plan, sweep and nccl-tests validate against their schemas") {
  const auto c = run_dtsim({"compare", scenario("default.json"), scenario("gpt3-175b-data-parallel-only.json"),
                            scenario("ps-vs-allreduce/resnet50-64gpu-ps-async.json"), "--format", "json",
                            "--no-timing"});
  REQUIRE(c.status == 3);
  expect_valid(c.out, "output-compare", "compare");

  const auto s = run_dtsim({"search", scenario("llama3-8b-h100-64.json"), "--top", "3", "--format", "json",
                            "--no-timing"});
  REQUIRE(s.status == 0);
  expect_valid(s.out, "output-search", "search");
  const auto d = run_dtsim({"search", scenario("dlrm-criteo-1tb-p4d.json"), "--top", "3", "--format", "json",
                            "--no-timing"});
  REQUIRE_MESSAGE(d.status == 0, d.err);
  expect_valid(d.out, "output-search", "search of a DLRM's embedding plans");

  for (const std::string p : {"plans/gpt3-175b-300b-tokens.json", "plans/llama3-8b-100b-tokens-weak.json"}) {
    const auto o = run_dtsim({"plan", scenario(p), "--top", "2", "--format", "json", "--no-timing",
                              "--usd-per-node-hour", "aws-p4d=20"});
    REQUIRE((o.status == 0 || o.status == 3));
    expect_valid(o.out, "output-plan", p);
  }
  // A plan with failures and one cluster on which nothing fits.
  const std::string plan = R"({"schema_version": 1, "name": "t", "model": {"preset": "gpt-1.3b"},
    "training": {"global_batch_size": 64}, "tokens": 1e11,
    "search": {"max_context": 1, "max_micro_batch": 1, "max_virtual_stages": 1, "keep_sharding": true,
               "keep_recompute": true, "keep_sequence_parallel": true},
    "failures": {"preset": "llama3-h100-2024", "restart_s": 600, "checkpoint": {"write_gbytes_per_s": 10},
                 "runs": 20},
    "candidates": [{"node": "dgx-a100", "usd_per_gpu_hour": 2.0, "price_source": "t", "nodes": [1, 2]}]})";
  const auto f = run_dtsim({"plan", "-", "--format", "json", "--no-timing"}, plan);
  REQUIRE_MESSAGE((f.status == 0 || f.status == 3), f.err);
  expect_valid(f.out, "output-plan", "plan with failures");

  // Every line of a sweep (first, points with an infeasible one, last), sharded too.
  for (const std::vector<std::string>& extra :
       {std::vector<std::string>{}, std::vector<std::string>{"--shard", "2/3"}}) {
    std::vector<std::string> args{"sweep",           scenario("default.json"), "--set", "/cluster/nodes=1,2,3",
                                  "--set",           "cluster.network.fabric=efa,tcp", "--scaling", "weak",
                                  "--no-timing"};
    args.insert(args.end(), extra.begin(), extra.end());
    const auto o = run_dtsim(args);
    REQUIRE((o.status == 0 || o.status == 3));
    std::istringstream lines(o.out);
    int n = 0;
    for (std::string line; std::getline(lines, line); ++n) expect_valid(line, "output-sweep-line", "sweep line");
    CHECK(n >= 3);
  }

  const auto t = run_dtsim({"nccl-tests", "--node", "aws-p4d", "--nodes", "128", "-b", "8", "-e", "64M",
                            "--format", "json"});
  REQUIRE(t.status == 0);
  expect_valid(t.out, "output-nccl-tests", "nccl-tests");
}

TEST_CASE("Scenario v1 and Plan v1 schemas: every shipped file validates, structural errors are caught") {
  std::size_t n = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(kSource + "/scenarios")) {
    if (entry.path().extension() != ".json") continue;
    const std::string path = entry.path().string();
    const bool plan = path.find("/scenarios/plans/") != std::string::npos;
    expect_valid(dtsim::testing::read_file(path), plan ? "plan" : "scenario", path);
    ++n;
  }
  CHECK(n >= 45);
  // Unknown keys, values outside an enumeration, a wrong type: the schema refuses them as dtsim does
  // (the loader's rules between keys are its own: tests/invalid/cases).
  for (const char* name : {"bad_precision", "bad_schedule", "bad_fp8_recipe", "failures_unknown_key",
                           "measured_single_gpu_unknown_key", "dp_unknown_key_parameter_server"}) {
    CAPTURE(name);
    const nlohmann::json doc =
        nlohmann::json::parse(dtsim::testing::read_file(kSource + "/tests/invalid/cases/" + name + ".json"));
    CHECK_FALSE(checker().check(doc, "scenario.schema.json").empty());
  }
}

TEST_CASE("hardware profiles, model presets and the validated regimes validate against their schemas") {
  const std::vector<std::pair<std::string, std::string>> folders = {
      {"hardware_profiles/gpus", "profile-gpu"},         {"hardware_profiles/nodes", "profile-node"},
      {"hardware_profiles/fabrics", "profile-fabric"},   {"hardware_profiles/software", "profile-software"},
      {"hardware_profiles/ps_transports", "profile-ps-transport"},
      {"hardware_profiles/failures", "profile-failures"}, {"models/presets", "model-preset"},
      {"models/dlrm/presets", "model-preset"}};
  std::size_t n = 0;
  for (const auto& [folder, schema] : folders) {
    for (const auto& entry : std::filesystem::directory_iterator(kSource + "/" + folder)) {
      if (entry.path().extension() != ".json") continue;
      expect_valid(dtsim::testing::read_file(entry.path()), schema, entry.path().string());
      ++n;
    }
  }
  CHECK(n >= 50);
  expect_valid(dtsim::testing::read_file(kSource + "/hardware_profiles/accuracy.json"), "accuracy", "accuracy.json");
  // A profile dtsim writes: a fabric fitted by import nccl-tests.
  const auto dir = dtsim::testing::scratch_dir("schema_import");
  const std::string out = (dir / "fitted.json").string();
  const auto o = run_dtsim({"import", "nccl-tests", kSource + "/tests/validation/nccl_logs/aws_p4de_2node_efa400_allreduce.log",
                            "--node", "aws-p4d", "--nodes", "2", "--min-bytes", "64M", "--id", "fitted", "--out", out});
  REQUIRE_MESSAGE(o.status == 0, o.err);
  expect_valid(dtsim::testing::read_file(out), "profile-fabric", "import nccl-tests");
  // The kernel table import kineto writes, with a refitted curve.
  const std::string table = (dir / "kernels.json").string();
  const auto k = run_dtsim({"import", "kineto", kSource + "/tests/data/kineto/train_step.json", "--out", table, "--gpu",
                            "h100-sxm5-80gb"});
  REQUIRE_MESSAGE(k.status == 0, k.err);
  expect_valid(dtsim::testing::read_file(table), "output-import-kineto", "import kineto");
}

TEST_CASE("dtsim schema prints each schema file and lists them, an unknown name is bad input") {
  const auto list = run_dtsim({"schema"});
  REQUIRE(list.status == 0);
  for (const char* name : {"scenario", "plan", "result", "output-run", "output-compare", "output-search",
                           "output-plan", "output-sweep-line", "output-nccl-tests", "output-import-kineto",
                           "profile-gpu", "profile-node",
                           "profile-fabric", "profile-software", "profile-ps-transport", "profile-failures",
                           "model-preset", "accuracy"}) {
    CAPTURE(name);
    CHECK(list.out.find(std::string(name) + " ") != std::string::npos);
    const auto one = run_dtsim({"schema", name});
    REQUIRE(one.status == 0);
    CHECK(one.out == dtsim::testing::read_file(kSource + "/schemas/" + name + ".schema.json"));
    CHECK(nlohmann::json::parse(one.out)["$id"] == std::string(name) + ".schema.json");
  }
  const auto bad = run_dtsim({"schema", "scenarios"});
  CHECK(bad.status == 2);
  CHECK(bad.out.empty());
  CHECK(bad.err.find("/name: got \"scenarios\"; expected one of accuracy, model-preset, output-compare") !=
        std::string::npos);
  CHECK(bad.err.find("scenario") != std::string::npos);
}
