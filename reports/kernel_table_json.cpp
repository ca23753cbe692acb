#include "reports/kernel_table_json.hpp"

#include <utility>

#include "config/scenario.hpp"
#include "reports/output_envelope.hpp"

namespace dtsim::reports {

nlohmann::ordered_json kernel_table_json(const calibration::KernelTable& t,
                                         const std::optional<GemmFitReport>& fit) {
  nlohmann::ordered_json inputs = {{"trace", t.file}};
  if (fit) inputs["gpu"] = fit->gpu;
  nlohmann::ordered_json j = output_envelope("import kineto", std::move(inputs));
  j["total_gpu_us"] = t.total_us;
  nlohmann::ordered_json classes = nlohmann::ordered_json::array();
  for (const auto& c : t.classes) {
    classes.push_back({{"class", calibration::to_string(c.cls)},
                       {"kernels", c.kernels},
                       {"total_us", c.total_us},
                       {"share", c.share}});
  }
  j["classes"] = classes;
  nlohmann::ordered_json kernels = nlohmann::ordered_json::array();
  for (const auto& k : t.kernels) {
    kernels.push_back({{"name", k.name},
                       {"class", calibration::to_string(k.cls)},
                       {"count", k.duration_us.count},
                       {"total_us", k.total_us},
                       {"median_us", k.duration_us.median},
                       {"p10_us", k.duration_us.p10},
                       {"p90_us", k.duration_us.p90}});
  }
  j["kernels"] = kernels;
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (const auto& g : t.gemm_measured) {
    rows.push_back({{"m", g.m},
                    {"n", g.n},
                    {"k", g.k},
                    {"precision", config::to_string(g.precision)},
                    {"tflops", g.tflops}});
  }
  j["gemm_measured"] = rows;
  j["gemm_kernels_without_shape"] = t.gemm_ops_without_shape;
  if (fit) {
    const auto& c = fit->fit.curve;
    j["gemm_fit"] = {{"gpu", fit->gpu},
                     {"precision", config::to_string(fit->precision)},
                     {"max_efficiency", c.max_efficiency},
                     {"tile_m", c.tile_m},
                     {"tile_n", c.tile_n},
                     {"k_half", c.k_half},
                     {"halving_efficiency", c.halving_efficiency},
                     {"rows", fit->fit.rows},
                     {"shape_fitted", fit->fit.shape_fitted},
                     {"mape_percent", fit->fit.mape_percent}};
  }
  return j;
}

}  // namespace dtsim::reports
