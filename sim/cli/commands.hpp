// The subcommands of the dtsim command line. Each one declares its options on a CLI11 subcommand and
// runs from the parsed options; errors propagate to run_cli(), which alone catches them.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "config/scenario.hpp"
#include "config/scenario_loader.hpp"
#include "reports/reports.hpp"
#include "search/search.hpp"
#include "search/space.hpp"

namespace dtsim::cli {

// A scenario's text from a file, or from `in` when the path is "-".
std::string read_scenario_text(const std::string& path, std::istream& in);
// A scenario from a file, or from `in` when the path is "-".
config::Scenario read_scenario(const std::string& path, std::istream& in);

struct RunOptions {
  std::string scenario;
  std::string format = "text";
  std::string out_path;     // "" writes the report to the output stream
  std::string trace_path;   // "" writes no trace
  std::string report_path;  // "" writes no report (.html, .md or .csv)
  bool no_timing = false;   // zero engine.wall_s so that repeated runs give identical bytes
};

CLI::App* add_run_command(CLI::App& app, RunOptions& options);
int run_command(const RunOptions& options, std::istream& in, std::ostream& out, std::ostream& err);

struct CheckOptions {
  std::string scenario;
};

CLI::App* add_check_command(CLI::App& app, CheckOptions& options);
int check_command(const CheckOptions& options, std::istream& in, std::ostream& out);

struct SweepOptions {
  std::string scenario;
  std::vector<std::string> sets;
  std::string scaling = "none";
  int jobs = 0;  // 0: all cores
  std::string format = "jsonl";
  std::string out_path;
  bool no_timing = false;
  std::string shard;        // "K/N": the K-th (1-based) of N disjoint slices of the points, by index
  std::string report_path;  // "" writes no report; else written once all points are done
  bool resume = false;      // carry on from --out's FILE.partial
};

// A sweep with --report keeps every point's result for the report: at most this many points.
inline constexpr std::uint64_t kMaxReportPoints = 10000;
// Points read (and then evaluated) at a time: a sweep's memory does not grow with its points.
inline constexpr std::uint64_t kSweepWindow = 1024;

CLI::App* add_sweep_command(CLI::App& app, SweepOptions& options);
int sweep_command(const SweepOptions& options, std::istream& in, std::ostream& out, std::ostream& err);

struct MergeOptions {
  std::vector<std::string> inputs;  // JSON Lines written by sweep shards
  std::string out_path;
  bool allow_incomplete = false;  // merge unfinished sweeps too (the output says it is unfinished)
};

CLI::App* add_merge_command(CLI::App& app, MergeOptions& options);
int merge_command(const MergeOptions& options, std::ostream& out);

struct CompareOptions {
  std::vector<std::string> scenarios;
  std::string format = "text";
  bool no_timing = false;
  std::string report_path;  // "" writes no report
};

CLI::App* add_compare_command(CLI::App& app, CompareOptions& options);
int compare_command(const CompareOptions& options, std::istream& in, std::ostream& out);

// The cluster a communication-only command runs on: --node, --nodes, --ranks-per-node, --fabric,
// --nic-gbps, --nics-per-node (network defaults from the node profile).
struct ClusterOptions {
  config::ClusterRequest request;
  std::int64_t ranks_per_node = 0;  // 0: the node's GPUs
  std::string fabric;
  double nic_gbps = 0;
  int nics_per_node = 0;
};

struct ResolvedCluster {
  config::Scenario cluster;  // cluster and hardware filled
  std::int64_t ranks_per_node = 0;
};

void add_cluster_options(CLI::App* cmd, ClusterOptions& options);
// InputError (pointer /ranks-per-node) when more ranks per node than GPUs are asked for.
ResolvedCluster resolve_cluster(const ClusterOptions& options);

// A size in bytes as nccl-tests writes it: "8", "64M", "8G" (K, M, G are powers of 1024).
double parse_size(const std::string& text, const std::string& option);

struct NcclTestsOptions {
  ClusterOptions cluster;
  std::string op = "all_reduce";
  std::string min_bytes = "8";
  std::string max_bytes = "8G";
  double factor = 2.0;
  std::string type = "float";
  std::string format = "text";
  std::string network = "analytic";  // network fidelity level: analytic or flow
  std::string algo = "auto";   // all-reduce algorithm (NCCL_ALGO), as cluster.network.all_reduce_algorithm
  std::string proto = "auto";  // protocol (NCCL_PROTO), as cluster.network.protocol
};

CLI::App* add_nccl_tests_command(CLI::App& app, NcclTestsOptions& options);
int nccl_tests_command(const NcclTestsOptions& options, std::ostream& out);

struct ImportNcclOptions {
  std::vector<std::string> logs;
  ClusterOptions cluster;
  std::string id;
  std::string out_path;
  std::string min_bytes = "1M";
};

CLI::App* add_import_command(CLI::App& app, ImportNcclOptions& options);
int import_nccl_command(const ImportNcclOptions& options, std::ostream& out);

struct SearchCommandOptions {
  std::string scenario;
  int top = 10;
  int jobs = 0;  // 0: all cores
  std::string format = "text";
  std::string out_path;
  bool exact = false;
  bool no_timing = false;
  std::string report_path;  // --report FILE.html|.md|.csv
  search::SpaceBounds bounds;
};

CLI::App* add_search_command(CLI::App& app, SearchCommandOptions& options);
int search_command(const SearchCommandOptions& options, std::istream& in, std::ostream& out);

// dtsim schema [NAME]: the JSON Schema NAME (schemas/NAME.schema.json), or without NAME the list of
// names with their titles. An unknown name is bad input (exit 2) listing the names.
struct SchemaCommandOptions {
  std::string name;
};

CLI::App* add_schema_command(CLI::App& app, SchemaCommandOptions& options);
int schema_command(const SchemaCommandOptions& options, std::ostream& out);

struct PlanCommandOptions {
  std::string plan;
  int jobs = 0;  // 0: all cores
  int top = 1;   // ranked strategies per cluster
  std::vector<std::string> usd_per_gpu_hour;   // NODE=USD, each
  std::vector<std::string> usd_per_node_hour;  // NODE=USD, each
  std::string report_path;                     // --report FILE.html|.md|.csv
  std::string format = "text";
  std::string out_path;
  bool no_timing = false;
};

CLI::App* add_plan_command(CLI::App& app, PlanCommandOptions& options);
int plan_command(const PlanCommandOptions& options, std::istream& in, std::ostream& out);

// Shared by search and plan: the --max-* and --keep-* options of the strategy space, the thread count
// (0: all cores), the --format value, writing to --out (or `out` when empty; through write_files) and,
// for --no-timing, a search outcome's wall and CPU times, speeds and thread count set to 0.
void add_space_options(CLI::App* cmd, search::SpaceBounds& bounds);
std::size_t worker_threads(int jobs);
reports::Format output_format(const std::string& format);
void write_output(const std::string& text, const std::string& out_path, std::ostream& out);
void zero_timing(search::SearchOutcome& outcome);

}  // namespace dtsim::cli
