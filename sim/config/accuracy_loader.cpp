#include <array>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "config/accuracy.hpp"
#include "config/json_reader.hpp"
#include "config/json_text.hpp"
#include "core/errors.hpp"

namespace dtsim::config {

std::vector<ValidatedRegime> load_accuracy(const std::string& hardware_profiles) {
  const std::string path = (std::filesystem::path(hardware_profiles) / "accuracy.json").string();
  std::vector<ValidatedRegime> out;
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return out;
  const nlohmann::json doc = read_json_file(path);
  ObjectReader top(doc, path, "");
  top.expect_keys({"schema_version", "note", "regimes"});
  top.required<std::int64_t>("schema_version", IntRule::between(1, 1));
  top.optional<std::string>("note", "");
  const nlohmann::json* regimes = top.find("regimes");
  if (regimes == nullptr || !regimes->is_array()) throw core::InputError(path, "/regimes", "expected an array");
  const auto percent = NumberRule::between(-1000.0, 1000.0);
  constexpr std::array kWorkloads{Choice<RegimeWorkload>{"transformer", RegimeWorkload::transformer},
                                  Choice<RegimeWorkload>{"layer_table", RegimeWorkload::layer_table},
                                  Choice<RegimeWorkload>{"dlrm", RegimeWorkload::dlrm},
                                  Choice<RegimeWorkload>{"moe", RegimeWorkload::moe}};
  constexpr std::array kScales{Choice<RegimeScale>{"one_gpu", RegimeScale::one_gpu},
                               Choice<RegimeScale>{"one_node", RegimeScale::one_node},
                               Choice<RegimeScale>{"multi_node", RegimeScale::multi_node}};
  constexpr std::array kMetrics{Choice<RegimeMetric>{"time", RegimeMetric::time},
                                Choice<RegimeMetric>{"rate", RegimeMetric::rate}};
  for (std::size_t i = 0; i < regimes->size(); ++i) {
    ObjectReader r((*regimes)[i], path, pointer_append("/regimes", i));
    r.expect_keys({"group", "workload", "gpu", "scale", "software", "metric", "source", "n", "mape_pct",
                   "median_signed_pct", "p10_signed_pct", "p90_signed_pct"});
    ValidatedRegime g;
    g.group = r.required<std::string>("group", StringRule::non_empty());
    g.workload = r.enum_value<RegimeWorkload>("workload", kWorkloads);
    g.gpu = r.required<std::string>("gpu", StringRule::non_empty());
    g.scale = r.enum_value<RegimeScale>("scale", kScales);
    g.software = r.required<std::string>("software", StringRule::any());
    g.metric = r.enum_value<RegimeMetric>("metric", kMetrics);
    g.source = r.required<std::string>("source", StringRule::non_empty());
    g.n = r.required<std::int64_t>("n", IntRule::positive());
    g.mape_pct = r.required<double>("mape_pct", NumberRule::between(0.0, 1000.0));
    g.median_signed_pct = r.required<double>("median_signed_pct", percent);
    g.p10_signed_pct = r.required<double>("p10_signed_pct", percent);
    g.p90_signed_pct = r.required<double>("p90_signed_pct", percent);
    if (g.p10_signed_pct > g.p90_signed_pct) throw r.error_at("p10_signed_pct", "greater than p90_signed_pct");
    r.finish();
    out.push_back(std::move(g));
  }
  top.finish();
  return out;
}

}  // namespace dtsim::config
