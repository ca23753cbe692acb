#include "reports/input_report.hpp"

#include <string>

#include <fmt/format.h>

namespace dtsim::reports {

namespace input_text {

// Samples per second as a reader would write them: whole numbers, or three digits below 100.
std::string rate(double samples_per_s) {
  return samples_per_s >= 100.0 ? fmt::format("{:.0f}", samples_per_s) : fmt::format("{:.3g}", samples_per_s);
}

}  // namespace input_text

nlohmann::ordered_json input_spec_json(const config::InputPipelineSpec& in) {
  nlohmann::ordered_json j;
  j["sample_bytes"] = in.sample_bytes;
  j["preprocess_core_s"] = in.preprocess_core_s;
  j["workers_per_gpu"] = in.workers_per_gpu;
  if (in.workers_per_gpu > 0) j["prefetch_factor"] = in.prefetch_factor;
  if (in.storage_gbytes_per_s) j["storage_gbytes_per_s"] = *in.storage_gbytes_per_s;
  j["cache_hit"] = in.cache_hit;
  j["dedup_factor"] = in.dedup_factor;
  if (in.host_cpu_cores) j["host_cpu_cores"] = *in.host_cpu_cores;
  if (const auto& r = in.reader_servers) {
    j["reader_servers"] = {{"count", r->count}, {"cores", r->cores}, {"nic_gbps", r->nic_gbps}};
    j["tensor_bytes"] = in.tensor_bytes;
  }
  return j;
}

nlohmann::ordered_json input_rate_json(const models::InputRate& rate, const models::InputSizing* sizing) {
  nlohmann::ordered_json j;
  j["samples_per_s"] = rate.samples_per_s;
  if (rate.limited_by.empty()) {
    j["limited_by"] = nullptr;
  } else {
    j["limited_by"] = rate.limited_by;
  }
  j["load_s"] = rate.load_s;
  j["prefetch"] = rate.prefetch;
  nlohmann::ordered_json limits = nlohmann::ordered_json::array();
  for (const models::InputLimit& l : rate.limits)
    limits.push_back({{"resource", l.resource}, {"samples_per_s", l.samples_per_s}});
  j["limits"] = std::move(limits);
  if (sizing != nullptr) {
    j["demand_samples_per_s"] = sizing->demand_samples_per_s;
    nlohmann::ordered_json needs = nlohmann::ordered_json::array();
    for (const models::ResourceNeed& n : sizing->needs)
      needs.push_back({{"quantity", n.quantity}, {"stated", n.stated}, {"needed", n.needed}});
    j["needs"] = std::move(needs);
  }
  return j;
}

void write_input_text(std::ostream& out, const models::InputRate& rate, const models::InputSizing* sizing,
                      double iteration_s) {
  constexpr int kLabelWidth = 13;  // text_report.cpp's column of section labels
  out << '\n';
  if (rate.limited_by.empty()) {
    out << fmt::format("{:<{}}{}\n", "input", kLabelWidth, "no resource with a cost: data is always ready");
    return;
  }
  out << fmt::format("{:<{}}{} samples/s, limited by {}: a global batch in {:.6f} s ({}; iteration {:.6f} s)\n",
                     "input", kLabelWidth, input_text::rate(rate.samples_per_s), rate.limited_by, rate.load_s,
                     rate.prefetch ? "prefetched beside the iteration" : "loaded before it: no workers",
                     iteration_s);
  std::string limits;
  for (const models::InputLimit& l : rate.limits)
    limits += fmt::format("{}{} {}", limits.empty() ? "" : ", ", l.resource, input_text::rate(l.samples_per_s));
  out << fmt::format("{:<{}}{} samples/s\n", "", kLabelWidth, limits);
  if (sizing == nullptr) return;
  out << fmt::format("{:<{}}to feed {} samples/s (the GPUs without waiting): {}\n", "", kLabelWidth,
                     input_text::rate(sizing->demand_samples_per_s), needs_text(sizing->needs));
}

std::string needs_text(const std::vector<models::ResourceNeed>& list) {
  std::string needs;
  for (const models::ResourceNeed& n : list)
    needs += fmt::format("{}{} {:.4g} (stated {:.4g})", needs.empty() ? "" : ", ", n.quantity, n.needed, n.stated);
  return needs;
}

}  // namespace dtsim::reports
