#include "config/failures_loader.hpp"

#include <array>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "config/json_excerpt.hpp"
#include "config/profile_files.hpp"
#include "config/profile_loader.hpp"
#include "core/errors.hpp"

namespace dtsim::config {

using nlohmann::json;

// Named, not anonymous: unity builds put several files in one translation unit.
namespace failures_reading {

constexpr std::array kFailureUnits{FailureUnit::gpu, FailureUnit::node, FailureUnit::job};
constexpr std::array kRecoveries{Recovery::restart, Recovery::elastic, Recovery::reroute};
constexpr std::array kEffects{FailureEffect::stop, FailureEffect::slow};
constexpr std::array kTargets{CheckpointTarget::storage, CheckpointTarget::peer_memory};

// A week of restarting after each failure, or a year of repair, is a mistake rather than a plan.
const NumberRule kRestartRule = NumberRule::between(0.0, 7.0 * 86400.0);

// One entry per category: {"name", "per", "failures_per_1000_days", "restart_s"?}.
void read_categories(ObjectReader& parent, std::vector<FailureCategory>& out) {
  const json* found = parent.find("categories");
  if (found == nullptr) return;
  const std::string at = pointer_append(parent.pointer(), "categories");
  if (!found->is_array() || found->empty()) {
    throw core::InputError(parent.file(), at,
                           fmt::format("got {}; expected a non-empty array of objects with \"name\", \"per\" and "
                                       "\"failures_per_1000_days\"",
                                       describe_value(*found)));
  }
  for (std::size_t i = 0; i < found->size(); ++i) {
    ObjectReader e((*found)[i], parent.file(), pointer_append(at, i));
    e.expect_keys({"name", "per", "failures_per_1000_days", "restart_s", "effect", "compute", "nic", "hours"});
    FailureCategory c;
    c.name = e.required<std::string>("name", StringRule::non_empty());
    c.per = e.enum_value<FailureUnit>("per", named_choices(kFailureUnits));
    // At most one failure per unit every 10 seconds: beyond it nothing could be trained.
    c.failures_per_1000_days = e.required<double>("failures_per_1000_days", NumberRule::between(0.0, 1000.0 * 8640.0));
    c.effect = e.optional_enum<FailureEffect>("effect", FailureEffect::stop, named_choices(kEffects));
    if (c.effect == FailureEffect::stop) {
      for (const char* key : {"compute", "nic", "hours"}) {
        if (e.has(key)) throw e.error_at(key, "applies to \"effect\": \"slow\" only");
      }
      c.restart_s = e.maybe<double>("restart_s", kRestartRule);
    } else {
      if (e.has("restart_s")) throw e.error_at("restart_s", "a slowdown does not restart the job");
      c.compute = e.optional<double>("compute", 1.0, NumberRule::fraction());
      c.nic = e.optional<double>("nic", 1.0, NumberRule::fraction());
      if (e.has("nic") && c.per == FailureUnit::gpu)
        throw e.error_at("nic", "a NIC factor is a node's: give it in a category \"per\": \"node\"");
      if (c.compute == 1.0 && c.nic == 1.0)
        throw e.error_here("expected \"compute\", \"nic\" or both below 1 for \"effect\": \"slow\"");
      c.hours = e.required<double>("hours", NumberRule{0.0, true, 365.0 * 24.0, false});
    }
    e.finish();
    out.push_back(std::move(c));
  }
}

void read_preset(FailureSpec& spec, const std::string& hardware_profiles, const IdLocation& where) {
  const detail::ProfileFile file = detail::open_profile(hardware_profiles, "failures", spec.preset,
                                                        "failure presets", where);
  ObjectReader r(file.doc, file.path, "");
  r.expect_keys({"schema_version", "id", "name", "categories", "sources"});
  detail::read_header(r, spec.preset);
  read_categories(r, spec.categories);
  if (spec.categories.empty()) throw r.mismatch("categories", "a non-empty array of failure categories");
  spec.preset_source = r.child("sources").required<std::string>("categories", StringRule::non_empty());
  detail::check_sources(r);
  r.finish();
}

CheckpointSpec read_checkpoint(ObjectReader& parent) {
  ObjectReader c = parent.child("checkpoint");
  c.expect_keys({"target", "interval_s", "write_gbytes_per_s", "read_gbytes_per_s", "asynchronous",
                 "snapshot_gbytes_per_s"});
  CheckpointSpec spec;
  spec.target = c.optional_enum<CheckpointTarget>("target", CheckpointTarget::storage, named_choices(kTargets));
  spec.interval_s = c.maybe<double>("interval_s", NumberRule::between(1.0, 365.0 * 86400.0));
  const NumberRule bandwidth{0.0, true, 1e6, false};  // up to a PB/s
  if (spec.target == CheckpointTarget::storage) {
    spec.write_gbytes_per_s = c.required<double>("write_gbytes_per_s", bandwidth);
    spec.read_gbytes_per_s = c.optional<double>("read_gbytes_per_s", spec.write_gbytes_per_s, bandwidth);
  } else {
    for (const char* key : {"write_gbytes_per_s", "read_gbytes_per_s"}) {
      if (c.has(key))
        throw c.error_at(key, "a peer-memory checkpoint moves at the nodes' NIC bandwidth; this key is storage's");
    }
  }
  spec.asynchronous = c.optional<bool>("asynchronous", false);
  if (spec.asynchronous) {
    if (!c.has("snapshot_gbytes_per_s")) {
      throw c.error_here(
          "expected \"snapshot_gbytes_per_s\": an asynchronous checkpoint stalls training while each GPU copies "
          "its state to host memory at this rate (its PCIe link's measured device-to-host copy rate)");
    }
    spec.snapshot_gbytes_per_s = c.required<double>("snapshot_gbytes_per_s", bandwidth);
  } else if (c.has("snapshot_gbytes_per_s")) {
    throw c.error_at("snapshot_gbytes_per_s", "applies to \"asynchronous\": true only");
  }
  c.finish();
  return spec;
}

}  // namespace failures_reading

const char* to_string(FailureUnit u) {
  switch (u) {
    case FailureUnit::gpu:
      return "gpu";
    case FailureUnit::node:
      return "node";
    case FailureUnit::job:
      return "job";
  }
  throw core::InternalError("to_string: invalid FailureUnit value");
}

const char* to_string(FailureEffect e) {
  switch (e) {
    case FailureEffect::stop:
      return "stop";
    case FailureEffect::slow:
      return "slow";
  }
  throw core::InternalError("to_string: invalid FailureEffect value");
}

const char* to_string(CheckpointTarget t) {
  switch (t) {
    case CheckpointTarget::storage:
      return "storage";
    case CheckpointTarget::peer_memory:
      return "peer_memory";
  }
  throw core::InternalError("to_string: invalid CheckpointTarget value");
}

const char* to_string(Recovery r) {
  switch (r) {
    case Recovery::restart:
      return "restart";
    case Recovery::elastic:
      return "elastic";
    case Recovery::reroute:
      return "reroute";
  }
  throw core::InternalError("to_string: invalid Recovery value");
}

std::optional<FailureSpec> read_failures(ObjectReader& parent, const std::string& hardware_profiles,
                                         const FailureReadRules& rules) {
  using namespace failures_reading;
  std::optional<ObjectReader> block = parent.optional_child("failures");
  if (!block) return std::nullopt;
  ObjectReader& f = *block;
  if (rules.run_length_allowed) {
    f.expect_keys({"preset", "categories", "restart_s", "checkpoint", "recovery", "spare_nodes", "repair_hours",
                   "reconfigure_s", "train_days", "train_steps", "train_tokens", "runs"});
  } else {
    f.expect_keys({"preset", "categories", "restart_s", "checkpoint", "recovery", "spare_nodes", "repair_hours",
                   "reconfigure_s", "runs"});
  }
  FailureSpec spec;
  if (f.has("preset")) {
    spec.preset = f.required<std::string>("preset", StringRule::non_empty());
    read_preset(spec, hardware_profiles, IdLocation{f.file(), pointer_append(f.pointer(), "preset")});
  }
  read_categories(f, spec.categories);
  if (spec.categories.empty()) {
    throw f.error_here("expected \"preset\" (a failure preset of hardware_profiles/failures), \"categories\" or both");
  }
  spec.restart_s = f.required<double>("restart_s", kRestartRule);
  spec.checkpoint = read_checkpoint(f);
  spec.recovery = f.optional_enum<Recovery>("recovery", Recovery::restart, named_choices(kRecoveries));
  spec.spare_nodes = f.maybe<std::int64_t>("spare_nodes", IntRule::between(0, 1 << 20));
  spec.repair_hours = f.maybe<double>("repair_hours", NumberRule{0.0, true, 365.0 * 24.0, false});
  spec.reconfigure_s = f.optional<double>("reconfigure_s", 0.0, kRestartRule);
  const bool runs_on = spec.recovery != Recovery::restart;  // elastic or reroute: without the failed node
  const char* recovery = spec.recovery == Recovery::reroute ? "re-routing" : "elastic recovery";
  if (spec.spare_nodes && runs_on) {
    throw f.error_at(
        "spare_nodes",
        fmt::format("{} runs on without replacement nodes; spares apply to \"restart\"", recovery));
  }
  if (!spec.repair_hours && (spec.spare_nodes || runs_on)) {
    throw f.error_here(
        spec.spare_nodes
            ? std::string("expected \"repair_hours\": with a limited pool of spare nodes, a failed "
                          "node returns to it when repaired")
            : fmt::format("expected \"repair_hours\": {} runs without the failed node until it is "
                          "repaired",
                          recovery));
  }
  if (rules.run_length_allowed) {
    const NumberRule length{0.0, true, 1e18, false};
    spec.train_days = f.maybe<double>("train_days", NumberRule{0.0, true, 3650.0, false});
    spec.train_steps = f.maybe<double>("train_steps", length);
    spec.train_tokens = f.maybe<double>("train_tokens", length);
    const int given = (spec.train_days ? 1 : 0) + (spec.train_steps ? 1 : 0) + (spec.train_tokens ? 1 : 0);
    if (given > 1) throw f.error_here("state the run's length once: \"train_days\", \"train_steps\" or \"train_tokens\"");
  }
  spec.runs = f.optional<std::int64_t>("runs", spec.runs, IntRule::between(1, kMaxFailureRuns));
  f.finish();
  return spec;
}

void check_failures(const std::string& file, const Scenario& s) {
  if (!s.failures) return;
  const FailureSpec& f = *s.failures;
  if (f.recovery != Recovery::restart && (s.layer_model || s.dlrm)) {
    throw core::InputError(file, "/failures/recovery",
                           f.recovery == Recovery::elastic ? kElasticRefused : kRerouteRefused);
  }
  if (f.train_tokens && (s.layer_model || s.model.seq_length <= 0)) {
    throw core::InputError(file, "/failures/train_tokens",
                           "this workload has no tokens per sample: give \"train_steps\" or \"train_days\"");
  }
  // A layer-table workload has its time to target (models/convergence), the run's length by default.
  if (!f.train_days && !f.train_steps && !f.train_tokens && !s.layer_model) {
    throw core::InputError(file, "/failures",
                           "expected the run's length: \"train_days\" (failure-free days), \"train_steps\" or "
                           "\"train_tokens\"");
  }
}

}  // namespace dtsim::config
