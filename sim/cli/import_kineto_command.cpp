#include "cli/import_kineto_command.hpp"

#include <map>
#include <ostream>

#include <fmt/format.h>

#include "calibration/fit_gemm.hpp"
#include "calibration/kernel_table.hpp"
#include "cli/cli.hpp"
#include "cli/output_files.hpp"
#include "config/kineto_reader.hpp"
#include "config/profile_loader.hpp"
#include "config/scenario_loader.hpp"
#include "core/errors.hpp"
#include "reports/kernel_table_json.hpp"

namespace dtsim::cli {

CLI::App* add_import_kineto_command(CLI::App& import, ImportKinetoOptions& o) {
  CLI::App* cmd =
      import.add_subcommand("kineto", "Kernel durations by operator class from a PyTorch profiler trace");
  cmd->add_option("trace", o.trace, "Chrome trace JSON written by torch.profiler")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("--out", o.out_path, "Kernel table (JSON) to write")->required();
  cmd->add_option("--gpu", o.gpu, "GPU profile id: refit its GEMM curve to the trace's GEMMs");
  return cmd;
}

int import_kineto_command(const ImportKinetoOptions& o, std::ostream& out) {
  check_outputs({{"--out", o.out_path}}, {o.trace});
  const config::KinetoTrace trace = config::read_kineto_trace(o.trace);
  const calibration::KernelTable table = calibration::kernel_table(trace);
  std::optional<reports::GemmFitReport> fit;
  if (!o.gpu.empty()) {
    const config::GpuProfile gpu = config::load_gpu_profile(
        config::default_data_paths().hardware_profiles, o.gpu, config::IdLocation{"command line", "/gpu"});
    std::map<int, std::vector<config::GemmMeasurement>> by_precision;
    for (const auto& g : table.gemm_measured) by_precision[static_cast<int>(g.precision)].push_back(g);
    const auto best =
        std::max_element(by_precision.begin(), by_precision.end(),
                         [](const auto& a, const auto& b) { return a.second.size() < b.second.size(); });
    if (best == by_precision.end()) {
      throw core::InputError(
          o.trace, "/traceEvents",
          "no GEMM kernel with a known shape (aten::mm, aten::addmm or aten::bmm with \"Input "
          "Dims\"; record with record_shapes=True) to fit --gpu's curve to");
    }
    const auto precision = static_cast<config::Precision>(best->first);
    const auto& peak = gpu.peak_tflops[static_cast<std::size_t>(best->first)];
    if (!peak) {
      throw core::InputError("command line", "/gpu",
                             fmt::format("{} has no {} peak; the trace's GEMMs are {}", o.gpu,
                                         config::to_string(precision), config::to_string(precision)));
    }
    const config::GemmCurve& curve = gpu.gemm_curve(precision);
    fit = reports::GemmFitReport{o.gpu, precision,
                                 calibration::fit_gemm_curve(best->second, *peak, gpu.sm_count, curve)};
  }
  write_files({{o.out_path, reports::kernel_table_json(table, fit).dump(2) + "\n"}});
  out << fmt::format("wrote {}: {} GPU events, {:.1f} us", o.out_path, trace.gpu.size(), table.total_us);
  for (const auto& c : table.classes)
    out << fmt::format("; {} {:.1f}%", calibration::to_string(c.cls), 100.0 * c.share);
  out << fmt::format("; {} GEMM shapes", table.gemm_measured.size());
  if (fit && fit->fit.shape_fitted) {
    out << fmt::format("; {} {} curve refitted: max_efficiency {:.3f}, k_half {:g} (fit error {:.1f}%)",
                       o.gpu, config::to_string(fit->precision), fit->fit.curve.max_efficiency,
                       fit->fit.curve.k_half, fit->fit.mape_percent);
  } else if (fit) {
    out << fmt::format(
        "; {} {} curve refitted: max_efficiency {:.3f} (fit error {:.1f}%); k_half {:g} and "
        "halving_efficiency {:g} kept from the profile: {} GEMM shape(s) do not determine them (at least {})",
        o.gpu, config::to_string(fit->precision), fit->fit.curve.max_efficiency, fit->fit.mape_percent,
        fit->fit.curve.k_half, fit->fit.curve.halving_efficiency, fit->fit.rows,
        calibration::kMinRowsForShape);
  }
  out << "\n";
  return kExitOk;
}

}  // namespace dtsim::cli
