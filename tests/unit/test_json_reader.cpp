// Unit tests of the config module: the strict JSON reader (sim/config/json_reader.hpp): parsing errors
// with line and column, JSON pointers, value descriptions, typed reads with their rules, enums and
// unknown keys; then profile, preset and scenario loading on a temporary data folder (defaults,
// preset overrides, errors located in profile files). tests/invalid/ covers one bad scenario per rule.
#include <doctest/doctest.h>

#include <array>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "config/json_reader.hpp"
#include "config/scenario_loader.hpp"
#include "core/errors.hpp"
#include "input_error_of.hpp"

namespace {

using dtsim::config::Choice;
using dtsim::config::IntRule;
using dtsim::config::NumberRule;
using dtsim::config::ObjectReader;
using dtsim::config::StringRule;
using dtsim::core::InputError;
using nlohmann::json;

using dtsim::testing::input_error_of;

enum class Color { red, green, blue };
constexpr std::array<Choice<Color>, 3> kColors = {
    {{"red", Color::red}, {"green", Color::green}, {"blue", Color::blue}}};

}  // namespace

TEST_CASE("parse_json_text accepts valid JSON") {
  const json j = dtsim::config::parse_json_text(R"({"a": [1, 2, {"b": true}]})", "s.json");
  CHECK(j["a"][2]["b"] == true);
}

TEST_CASE("parse_json_text reports malformed JSON with line and column") {
  // Line 3 is `  "b": ,`: the ',' at column 8 is where a value was expected.
  const std::string text = "{\n  \"a\": 1,\n  \"b\": ,\n}";
  const InputError e = input_error_of([&] { dtsim::config::parse_json_text(text, "bad.json"); });
  CHECK(e.file() == "bad.json");
  CHECK(e.pointer() == "");
  CHECK(e.message().find("malformed JSON at line 3, column 8") == 0);
  CHECK(std::string(e.what()).find("bad.json: malformed JSON at line 3, column 8") == 0);
}

TEST_CASE("parse_json_text reports the end of input as the position after the last character") {
  // "{\n  \"a\": 1\n": end of input is on line 3, column 1.
  const InputError e = input_error_of([] { dtsim::config::parse_json_text("{\n  \"a\": 1\n", "t.json"); });
  CHECK(e.message().find("malformed JSON at line 3, column 1") == 0);
}

TEST_CASE("parse_json_text rejects empty input, trailing garbage and number overflow") {
  CHECK(input_error_of([] { dtsim::config::parse_json_text("", "e.json"); }).message() ==
        "empty input; expected a JSON object");
  CHECK(input_error_of([] { dtsim::config::parse_json_text(" \n\t", "e.json"); }).message() ==
        "empty input; expected a JSON object");
  // `{} x`: the 'x' is byte 4, line 1, column 4.
  CHECK(input_error_of([] { dtsim::config::parse_json_text("{} x", "g.json"); })
            .message()
            .find("malformed JSON at line 1, column 4") == 0);
  CHECK(input_error_of([] { dtsim::config::parse_json_text(R"({"a": 1e400})", "n.json"); })
            .message()
            .find("number overflow") != std::string::npos);
}

TEST_CASE("parse_json_text rejects duplicate keys and names their pointer") {
  const InputError e = input_error_of(
      [] { dtsim::config::parse_json_text(R"({"a": [0, {"x": 1, "x": 2}], "b": 1})", "d.json"); });
  CHECK(e.pointer() == "/a/1/x");
  CHECK(e.message() == "duplicate key 'x'");
  // The same key in two different objects is fine.
  CHECK_NOTHROW(
      dtsim::config::parse_json_text(R"({"a": {"x": 1}, "b": {"x": 1}, "x": [{"x": 0}]})", "ok.json"));
}

TEST_CASE("read_text_file reports a missing file and a directory") {
  const std::string missing = "/nonexistent/dtsim/no_such_file.json";
  const InputError e = input_error_of([&] { dtsim::config::read_json_file(missing); });
  CHECK(e.file() == missing);
  CHECK(e.message() == "cannot open file: no such file");
  const std::string dir = std::filesystem::temp_directory_path().string();
  CHECK(input_error_of([&] { dtsim::config::read_text_file(dir); }).message() ==
        "cannot open file: it is a directory");
}

TEST_CASE("JSON pointer tokens are escaped per RFC 6901") {
  CHECK(dtsim::config::escape_pointer_token("a/b~c") == "a~1b~0c");
  CHECK(dtsim::config::escape_pointer_token("~1") == "~01");
  CHECK(dtsim::config::pointer_append("/x", "m/n") == "/x/m~1n");
  CHECK(dtsim::config::pointer_append("/x", std::size_t{3}) == "/x/3");
  CHECK(dtsim::config::pointer_append("", "") == "/");
}

TEST_CASE("describe_value dumps compactly and truncates long values") {
  CHECK(dtsim::config::describe_value(json("bf32")) == "\"bf32\"");
  CHECK(dtsim::config::describe_value(json::parse(R"({"a": [1, 2]})")) == R"({"a":[1,2]})");
  const std::string long_text(200, 'x');
  const std::string d = dtsim::config::describe_value(json(long_text));
  CHECK(d.size() == 60);
  CHECK(d.substr(57) == "...");
  CHECK(dtsim::config::json_type_name(json(1)) == std::string("integer"));
  CHECK(dtsim::config::json_type_name(json(1.5)) == std::string("number"));
  CHECK(dtsim::config::json_type_name(json(true)) == std::string("boolean"));
}

TEST_CASE("rules describe themselves") {
  CHECK(IntRule::positive().describe() == "a positive integer");
  CHECK(IntRule::non_negative().describe() == "a non-negative integer");
  CHECK(IntRule::between(0, 3).describe() == "an integer from 0 to 3");
  CHECK(IntRule::at_least(2).describe() == "an integer >= 2");
  CHECK(IntRule::any().describe() == "an integer");
  CHECK(NumberRule::positive().describe() == "a positive number");
  CHECK(NumberRule::at_least(1.0).describe() == "a number >= 1");
  CHECK(NumberRule::fraction().describe() == "a number in (0, 1]");
  CHECK(StringRule::non_empty().describe() == "a non-empty string");
}

TEST_CASE("integers: accepted forms and rejected values with exact messages") {
  const json doc = json::parse(R"({"n": 8, "neg": -2, "s": "96", "f": 2.5, "whole": 4.0, "exp": 1e3,
                                    "b": true, "nul": null, "big": 18446744073709551615, "wide": 3000000000})");
  ObjectReader r(doc, "f.json", "/parallelism");
  CHECK(r.required<std::int64_t>("n", IntRule::positive()) == 8);
  CHECK(r.required<std::int64_t>("whole", IntRule::positive()) == 4);
  CHECK(r.required<std::int64_t>("exp", IntRule::positive()) == 1000);
  CHECK(r.required<std::int64_t>("wide", IntRule::positive()) == 3000000000);

  InputError e = input_error_of([&] { r.required<std::int64_t>("neg", IntRule::positive()); });
  CHECK(e.file() == "f.json");
  CHECK(e.pointer() == "/parallelism/neg");
  CHECK(e.message() == "got -2; expected a positive integer");
  CHECK(std::string(e.what()) == "f.json: /parallelism/neg: got -2; expected a positive integer");

  CHECK(input_error_of([&] { r.required<std::int64_t>("s", IntRule::positive()); }).message() ==
        "got \"96\" (string); expected a positive integer");
  CHECK(input_error_of([&] { r.required<std::int64_t>("f", IntRule::positive()); }).message() ==
        "got 2.5; expected a positive integer");
  CHECK(input_error_of([&] { r.required<std::int64_t>("b", IntRule::positive()); }).message() ==
        "got true (boolean); expected a positive integer");
  CHECK(input_error_of([&] { r.required<std::int64_t>("nul", IntRule::positive()); }).message() ==
        "got null; expected a positive integer");
  CHECK(input_error_of([&] { r.required<std::int64_t>("big", IntRule::positive()); }).message() ==
        "got 18446744073709551615; expected a positive integer");
  // int narrows the range to 32 bits.
  CHECK(input_error_of([&] { r.required<int>("wide", IntRule::positive()); }).message() ==
        "got 3000000000; expected an integer from 1 to 2147483647");
  CHECK(input_error_of([&] { r.required<int>("n", IntRule::between(0, 3)); }).message() ==
        "got 8; expected an integer from 0 to 3");
}

TEST_CASE("missing, optional and maybe") {
  const json doc = json::parse(R"({"present": 3})");
  ObjectReader r(doc, "f.json", "/training");
  const InputError e =
      input_error_of([&] { r.required<std::int64_t>("global_batch_size", IntRule::positive()); });
  CHECK(e.pointer() == "/training/global_batch_size");
  CHECK(e.message() == "missing required key; expected a positive integer");
  CHECK(r.optional<std::int64_t>("micro_batch_size", 1, IntRule::positive()) == 1);
  CHECK(r.optional<std::int64_t>("present", 1, IntRule::positive()) == 3);
  CHECK_FALSE(r.maybe<double>("absent").has_value());
  CHECK_NOTHROW(r.finish());
}

TEST_CASE("numbers, strings and booleans") {
  const json doc =
      json::parse(R"({"x": 0.5, "zero": 0, "big": 1.5, "i": 2, "s": "", "t": "yes", "b": false, "o": {}})");
  ObjectReader r(doc, "p.json", "");
  CHECK(r.required<double>("x", NumberRule::fraction()) == 0.5);
  CHECK(r.required<double>("i", NumberRule::positive()) == 2.0);
  CHECK(input_error_of([&] { r.required<double>("zero", NumberRule::positive()); }).message() ==
        "got 0; expected a positive number");
  CHECK(input_error_of([&] { r.required<double>("big", NumberRule::fraction()); }).message() ==
        "got 1.5; expected a number in (0, 1]");
  CHECK(input_error_of([&] { r.required<double>("t", NumberRule::positive()); }).message() ==
        "got \"yes\" (string); expected a positive number");
  CHECK(input_error_of([&] { r.required<std::string>("s"); }).message() ==
        "got \"\"; expected a non-empty string");
  CHECK(r.required<std::string>("s", StringRule::any()).empty());
  CHECK(input_error_of([&] { r.required<std::string>("i"); }).message() ==
        "got 2 (integer); expected a non-empty string");
  CHECK(r.required<bool>("b") == false);
  CHECK(input_error_of([&] { r.required<bool>("t"); }).message() ==
        "got \"yes\" (string); expected true or false");
  CHECK(input_error_of([&] { r.required<bool>("o"); }).message() ==
        "got {} (object); expected true or false");
}

TEST_CASE("enumerations list their choices in order") {
  const json doc = json::parse(R"({"c": "green", "bad": "purple", "num": 3})");
  ObjectReader r(doc, "e.json", "/paint");
  CHECK(r.enum_value<Color>("c", kColors) == Color::green);
  CHECK(r.optional_enum<Color>("absent", Color::blue, kColors) == Color::blue);
  const InputError e = input_error_of([&] { r.enum_value<Color>("bad", kColors); });
  CHECK(e.pointer() == "/paint/bad");
  CHECK(e.message() == "got \"purple\"; expected one of \"red\", \"green\", \"blue\"");
  CHECK(input_error_of([&] { r.enum_value<Color>("num", kColors); }).message() ==
        "got 3 (integer); expected one of \"red\", \"green\", \"blue\"");
  CHECK(input_error_of([&] { r.enum_value<Color>("none", kColors); }).message() ==
        "missing required key; expected one of \"red\", \"green\", \"blue\"");
}

TEST_CASE("objects: children, non-objects and unknown keys") {
  const json doc = json::parse(R"({"model": {"layers": 2, "lyaers": 3}, "list": [1], "a/b": {}})");
  ObjectReader top(doc, "s.json", "");
  ObjectReader model = top.child("model");
  CHECK(model.pointer() == "/model");
  CHECK(model.required<std::int64_t>("layers", IntRule::positive()) == 2);
  model.optional<std::int64_t>("heads", 1, IntRule::positive());
  const InputError unknown = input_error_of([&] { model.finish(); });
  CHECK(unknown.pointer() == "/model/lyaers");
  CHECK(unknown.message() == "unknown key 'lyaers'; expected one of: layers, heads");

  const InputError not_object = input_error_of([&] { top.child("list"); });
  CHECK(not_object.pointer() == "/list");
  CHECK(not_object.message() == "got [1] (array); expected an object");
  CHECK(input_error_of([&] { top.child("missing"); }).message() ==
        "missing required key; expected an object");
  CHECK_FALSE(top.optional_child("missing").has_value());

  const ObjectReader escaped = *top.optional_child("a/b");
  CHECK(escaped.pointer() == "/a~1b");
  CHECK(input_error_of([] { ObjectReader(json::array(), "top.json", ""); }).message() ==
        "got [] (array); expected an object");
}

TEST_CASE("expect_keys rejects a misspelt key before a missing key is reported") {
  const json doc = json::parse(R"({"trainig": {}, "name": "x"})");
  ObjectReader r(doc, "s.json", "");
  const InputError e = input_error_of([&] { r.expect_keys({"name", "training"}); });
  CHECK(e.pointer() == "/trainig");
  CHECK(e.message() == "unknown key 'trainig'; expected one of: name, training");

  const json ok = json::parse(R"({"name": "x"})");
  ObjectReader fine(ok, "s.json", "");
  fine.expect_keys({"name", "training"});
  CHECK(fine.required<std::string>("name") == "x");
  CHECK(fine.find("training") == nullptr);
  CHECK_NOTHROW(fine.finish());
}

TEST_CASE("finish reports keys in sorted order and an object that takes no keys") {
  const json doc = json::parse(R"({"zeta": 1, "alpha": 2})");
  ObjectReader r(doc, "s.json", "/x");
  const InputError e = input_error_of([&] { r.finish(); });
  CHECK(e.pointer() == "/x/alpha");
  CHECK(e.message() == "unknown key 'alpha'; this object takes no keys");
}

// ---- profiles, presets and scenarios on a temporary data folder ----------------------------------

namespace {

namespace fs = std::filesystem;

json with_sources(json profile) {
  json sources = json::object();
  for (const auto& item : profile.items()) {
    if (item.key() != "schema_version" && item.key() != "id" && item.key() != "name")
      sources[item.key()] = "test";
  }
  profile["sources"] = sources;
  return profile;
}

// A data folder with one GPU, one node, one fabric and one preset; removed on destruction.
class DataFolder {
 public:
  explicit DataFolder(const std::string& tag)
      : root_(fs::temp_directory_path() / ("dtsim_test_" + tag + "_" + std::to_string(::getpid()))) {
    fs::remove_all(root_);
    paths_ = {(root_ / "hardware_profiles").string(), (root_ / "presets").string(), (root_ / "schemas").string()};
    write("hardware_profiles/gpus/g1.json", gpu_profile());
    write("hardware_profiles/nodes/n1.json", node_profile());
    write("hardware_profiles/fabrics/f1.json", with_sources({{"schema_version", 1},
                                                             {"id", "f1"},
                                                             {"name", "F1"},
                                                             {"efficiency", 0.9},
                                                             {"latency_us", 2.0},
                                                             {"per_message_overhead_us", 1.0}}));
    write("presets/p1.json", {{"schema_version", 1},
                              {"id", "p1"},
                              {"name", "P1"},
                              {"source", "test"},
                              {"model",
                               {{"kind", "transformer"},
                                {"layers", 4},
                                {"hidden_size", 256},
                                {"heads", 8},
                                {"kv_heads", 2},
                                {"vocab_size", 1000},
                                {"seq_length", 128}}}});
  }
  ~DataFolder() {
    std::error_code ec;
    fs::remove_all(root_, ec);
  }
  DataFolder(const DataFolder&) = delete;
  DataFolder& operator=(const DataFolder&) = delete;

  static json gpu_profile() {
    return with_sources({{"schema_version", 1},
                         {"id", "g1"},
                         {"name", "G1"},
                         {"peak_tflops", {{"bf16", 100.0}}},
                         {"hbm_bytes", 8e10},
                         {"hbm_bandwidth_gbytes_per_s", 2000.0},
                         {"memory_efficiency", 0.8},
                         {"sm_count", 100},
                         {"gemm",
                          {{"max_efficiency", 0.8},
                           {"tile_m", 128},
                           {"tile_n", 128},
                           {"k_half", 64.0},
                           {"halving_efficiency", 0.9}}},
                         {"attention_efficiency", 0.5},
                         {"kernel_launch_us", 4.0},
                         {"overlap_slowdown", 1.1}});
  }
  static json node_profile() {
    return with_sources(
        {{"schema_version", 1},
         {"id", "n1"},
         {"name", "N1"},
         {"gpu", "g1"},
         {"gpus_per_node", 4},
         {"intra_node",
          {{"kind", "nvlink"}, {"gbytes_per_s", 150.0}, {"efficiency", 0.7}, {"latency_us", 3.0}}},
         {"network", {{"fabric", "f1"}, {"nic_gbps", 100.0}, {"nics_per_node", 2}}},
         {"host_memory_bytes", 5e11}});
  }
  void write(const std::string& relative, const json& content) const {
    const fs::path p = root_ / relative;
    fs::create_directories(p.parent_path());
    std::ofstream(p) << content.dump(2);
  }
  std::string path(const std::string& relative) const { return (root_ / relative).string(); }
  const dtsim::config::DataPaths& paths() const { return paths_; }

 private:
  fs::path root_;
  dtsim::config::DataPaths paths_;
};

const char* const kInlineScenario = R"({"schema_version": 1, "name": "t",
  "model": {"kind": "transformer", "layers": 2, "hidden_size": 64, "heads": 4, "vocab_size": 100, "seq_length": 16},
  "cluster": {"node": "n1", "nodes": 3}, "training": {"global_batch_size": 24}})";

}  // namespace

TEST_CASE("a minimal scenario gets its defaults from the contract and the node profile") {
  const DataFolder data("defaults");
  const dtsim::config::Scenario s =
      dtsim::config::load_scenario_text(kInlineScenario, "s.json", data.paths());
  CHECK(s.source == "s.json");
  CHECK(s.model.preset.empty());
  CHECK(s.model.kv_heads == 4);           // default: heads
  CHECK(s.model.ffn_hidden_size == 256);  // default: 4 * hidden_size
  CHECK(s.model.mlp == dtsim::config::MlpKind::gelu);
  CHECK(s.model.attention == dtsim::config::AttentionKind::flash);
  CHECK(s.gpu_count() == 12);       // 3 nodes x 4 GPUs
  CHECK(s.parallelism.data == 12);  // derived: 12 / (1 * 1 * 1)
  CHECK(s.cluster.network.fabric == "f1");
  CHECK(s.cluster.network.nic_gbps == 100.0);
  CHECK(s.cluster.network.nics_per_node == 2);
  CHECK(s.cluster.network.oversubscription == 1.0);
  CHECK(s.node.intra_kind == dtsim::config::IntraNodeKind::nvlink);
  CHECK(s.gpu.peak_tflops[static_cast<std::size_t>(dtsim::config::Precision::bf16)] == 100.0);
  CHECK_FALSE(s.gpu.peak_tflops[static_cast<std::size_t>(dtsim::config::Precision::fp8)].has_value());
  CHECK(s.training.precision == dtsim::config::Precision::bf16);
  CHECK(s.training.bucket_bytes == 40e6);
  CHECK(s.simulation.seed == 1);
}

TEST_CASE("a preset with overrides keeps the keys not given") {
  const DataFolder data("preset");
  const std::string text = R"({"schema_version": 1, "name": "t", "model": {"preset": "p1", "seq_length": 512},
    "cluster": {"node": "n1", "nodes": 1}, "parallelism": {"tensor": 2},
    "training": {"global_batch_size": 8, "bucket_mb": 25}})";
  const dtsim::config::Scenario s = dtsim::config::load_scenario_text(text, "s.json", data.paths());
  CHECK(s.model.preset == "p1");
  CHECK(s.model.seq_length == 512);
  CHECK(s.model.layers == 4);
  CHECK(s.model.kv_heads == 2);
  CHECK(s.parallelism.data == 2);  // 4 GPUs / tensor 2
  CHECK(s.training.bucket_bytes == 25e6);
}

TEST_CASE("errors inside profiles name the profile file and pointer") {
  const DataFolder data("profiles");
  // One bad edit of a node or GPU profile per case, the error it must produce (no message: any).
  struct Case {
    bool gpu;  // the GPU profile g1, else the node profile n1
    std::function<void(json&)> edit;
    const char* pointer;
    const char* message;
  };
  const std::vector<Case> cases{
      {false, [](json& p) { p["sources"].erase("gpus_per_node"); }, "/sources/gpus_per_node", nullptr},
      {false, [](json& p) { p["sources"]["colour"] = "test"; }, "/sources/colour", nullptr},
      {false, [](json& p) { p["id"] = "n2"; }, "/id", "got \"n2\"; expected \"n1\" (the file name)"},
      {false, [](json& p) { p["gpu"] = "g9"; }, "/gpu", "got \"g9\"; expected one of the GPU profiles: g1"},
      {false, [](json& p) { p["network"]["fabric"] = "f9"; }, "/network/fabric", nullptr},
      {true,
       [](json& p) {
         p["attention_half_waves"] = -1.0;
         p["sources"]["attention_half_waves"] = "test";
       },
       "/attention_half_waves", "got -1.0; expected a non-negative number"},
      {true,
       [](json& p) {
         p["attention_measured"] = json::array({{{"batch_heads", 16}, {"seq", 4096}, {"efficiency", 1.5}}});
         p["sources"]["attention_measured"] = "test";
       },
       "/attention_measured/0/efficiency", nullptr},
      {true,
       [](json& p) {
         p["memory_classes"] = {{"norm_backward", 1.2}};
         p["sources"]["memory_classes"] = "test";
       },
       "/memory_classes/norm_backward", nullptr},
      {true,
       [](json& p) {
         p["memory_classes"] = {{"streaming", 0.9}};
         p["sources"]["memory_classes"] = "test";
       },
       "/memory_classes/streaming", nullptr},
  };
  for (const Case& c : cases) {
    CAPTURE(c.pointer);
    const std::string file = c.gpu ? "hardware_profiles/gpus/g1.json" : "hardware_profiles/nodes/n1.json";
    json profile = c.gpu ? DataFolder::gpu_profile() : DataFolder::node_profile();
    c.edit(profile);
    data.write(file, profile);
    const InputError e =
        input_error_of([&] { dtsim::config::load_scenario_text(kInlineScenario, "s.json", data.paths()); });
    CHECK(e.file() == data.path(file));
    CHECK(e.pointer() == c.pointer);
    if (c.message != nullptr) CHECK(e.message() == c.message);
    data.write(file, c.gpu ? DataFolder::gpu_profile() : DataFolder::node_profile());
  }
}
