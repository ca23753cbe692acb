// run_cli(): parses the command line with CLI11, runs the chosen subcommand and turns what it throws
// into an exit status and one message on the error stream. CLI11 throws its own errors for help
// (printed to the output stream, status 0), --version (likewise) and bad usage (status 2). An output
// that cannot be written (OutputError, or the output stream failing by the end of a command that
// otherwise succeeded) is exit status 1 with "error: cannot write ...".
#include "cli/cli.hpp"

#include <exception>
#include <istream>
#include <iterator>
#include <ostream>
#include <string_view>

#include "cli/calibrate_command.hpp"
#include "cli/commands.hpp"
#include "cli/import_kineto_command.hpp"
#include "config/json_reader.hpp"
#include "config/scenario_loader.hpp"
#include "core/errors.hpp"

namespace dtsim::cli {

std::string read_scenario_text(const std::string& path, std::istream& in) {
  if (path != "-") return config::read_text_file(path);
  return config::read_text_stream(in, path);
}

config::Scenario read_scenario(const std::string& path, std::istream& in) {
  return config::load_scenario_text(read_scenario_text(path, in), path, config::default_data_paths());
}

namespace {

void report_internal(std::ostream& err, std::string_view what) {
  constexpr std::string_view kPrefix = "internal error: ";
  if (what.substr(0, kPrefix.size()) != kPrefix) err << kPrefix;
  err << what << '\n';
}

}  // namespace

int run_cli(const std::vector<std::string>& args, std::istream& in, std::ostream& out, std::ostream& err) {
  CLI::App app{"dtsim: discrete-event simulator of distributed deep-learning training clusters", "dtsim"};
  app.set_version_flag("--version", std::string("dtsim ") + DTSIM_VERSION);
  // At most one subcommand: a word that names none is then reported as unexpected, not as missing.
  app.require_subcommand(0, 1);

  RunOptions run_options;
  CLI::App* run = add_run_command(app, run_options);
  CheckOptions check_options;
  CLI::App* check = add_check_command(app, check_options);
  SweepOptions sweep_options;
  CLI::App* sweep = add_sweep_command(app, sweep_options);
  MergeOptions merge_options;
  CLI::App* merge = add_merge_command(app, merge_options);
  CompareOptions compare_options;
  CLI::App* compare = add_compare_command(app, compare_options);
  SearchCommandOptions search_options;
  CLI::App* search = add_search_command(app, search_options);
  PlanCommandOptions plan_options;
  CLI::App* plan = add_plan_command(app, plan_options);
  NcclTestsOptions nccl_options;
  CLI::App* nccl = add_nccl_tests_command(app, nccl_options);
  ImportNcclOptions import_options;
  CLI::App* import = add_import_command(app, import_options);
  ImportKinetoOptions kineto_options;
  CLI::App* kineto = add_import_kineto_command(*app.get_subcommand("import"), kineto_options);
  CalibrateOptions calibrate_options;
  CLI::App* calibrate = add_calibrate_command(app, calibrate_options);
  SchemaCommandOptions schema_options;
  CLI::App* schema = add_schema_command(app, schema_options);

  try {
    std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 consumes from the back
    app.parse(reversed);
  } catch (const CLI::ParseError& e) {
    return app.exit(e, out, err) == 0 ? kExitOk : kExitBadInput;
  }

  const int status = [&] {
    try {
      if (run->parsed()) return run_command(run_options, in, out, err);
      if (check->parsed()) return check_command(check_options, in, out);
      if (compare->parsed()) return compare_command(compare_options, in, out);
      if (sweep->parsed()) return sweep_command(sweep_options, in, out, err);
      if (merge->parsed()) return merge_command(merge_options, out);
      if (search->parsed()) return search_command(search_options, in, out);
      if (plan->parsed()) return plan_command(plan_options, in, out);
      if (nccl->parsed()) return nccl_tests_command(nccl_options, out);
      if (import->parsed()) return import_nccl_command(import_options, out);
      if (kineto->parsed()) return import_kineto_command(kineto_options, out);
      if (calibrate->parsed()) return calibrate_command(calibrate_options, out, err);
      if (schema->parsed()) return schema_command(schema_options, out);
      err << "error: a subcommand is required\nRun with --help for more information.\n";
      return kExitBadInput;
    } catch (const core::InputError& e) {
      err << "error: " << e.what() << '\n';
      return kExitBadInput;
    } catch (const core::InfeasibleError& e) {  // outside evaluate(): nccl-tests' collectives
      err << "infeasible: " << e.what() << '\n';
      return kExitInfeasible;
    } catch (const core::OutputError& e) {
      err << "error: " << e.what() << '\n';
      return kExitInternal;
    } catch (const core::InternalError& e) {
      report_internal(err, e.what());
      return kExitInternal;
    } catch (const std::exception& e) {
      report_internal(err, e.what());
      return kExitInternal;
    }
  }();
  if (status == kExitOk || status == kExitInfeasible) {
    out.flush();
    if (!out) {
      err << "error: cannot write to standard output\n";
      return kExitInternal;
    }
  }
  return status;
}

}  // namespace dtsim::cli
