#include "config/plan_loader.hpp"

#include <algorithm>
#include <cstdlib>
#include <limits>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "config/failures_loader.hpp"
#include "config/json_reader.hpp"
#include "config/profile_loader.hpp"
#include "core/checked_math.hpp"

namespace dtsim::config {

namespace {

using json = nlohmann::json;

constexpr std::int64_t kPlanSchemaVersion = 1;

PlanSearchBounds read_search(ObjectReader& top) {
  PlanSearchBounds b;
  std::optional<ObjectReader> r = top.optional_child("search");
  if (!r) return b;
  const auto positive = IntRule::positive();
  b.max_tensor = r->optional<std::int64_t>("max_tensor", b.max_tensor, positive);
  b.max_pipeline = r->optional<std::int64_t>("max_pipeline", b.max_pipeline, positive);
  b.max_context = r->optional<std::int64_t>("max_context", b.max_context, positive);
  b.max_micro_batch = r->optional<std::int64_t>("max_micro_batch", b.max_micro_batch, positive);
  b.max_virtual_stages = r->optional<std::int64_t>("max_virtual_stages", b.max_virtual_stages, positive);
  b.keep_recompute = r->optional<bool>("keep_recompute", b.keep_recompute);
  b.keep_sharding = r->optional<bool>("keep_sharding", b.keep_sharding);
  b.keep_sequence_parallel = r->optional<bool>("keep_sequence_parallel", b.keep_sequence_parallel);
  b.keep_expert = r->optional<bool>("keep_expert", b.keep_expert);
  b.keep_schedule = r->optional<bool>("keep_schedule", b.keep_schedule);
  b.min_headroom_gib = r->optional<double>("min_headroom_gib", b.min_headroom_gib, NumberRule::between(0.0, 1e6));
  r->finish();
  return b;
}

core::InputError too_many_gpus(const std::string& file, const std::string& pointer, std::int64_t nodes,
                               std::int64_t gpus_per_node) {
  return core::InputError(
      file, pointer,
      fmt::format("got {} nodes of {} GPUs, more GPUs than a 64-bit count holds; expected at "
                  "most {} nodes",
                  nodes, gpus_per_node, std::numeric_limits<std::int64_t>::max() / gpus_per_node));
}

// "nodes": [16, 32, 64] (ascending) or {"from": 16, "to": 128} (doubling from `from` while <= `to`: at
// most 63 counts, the doubling stopped before it could overflow). Every count times the node's GPUs
// must fit in 64 bits: InputError at the count (or the range's "to") otherwise.
std::vector<std::int64_t> read_node_counts(ObjectReader& c, std::int64_t gpus_per_node) {
  const json* value = c.find("nodes");
  const std::string at = pointer_append(c.pointer(), "nodes");
  if (value == nullptr) throw c.mismatch("nodes", "a list of node counts or {\"from\": N, \"to\": M}");
  std::vector<std::int64_t> counts;
  if (value->is_object()) {
    ObjectReader range(*value, c.file(), at);
    const std::int64_t from = range.required<std::int64_t>("from", IntRule::positive());
    const std::int64_t to = range.required<std::int64_t>("to", IntRule::at_least(from));
    range.finish();
    if (!core::checked_mul(to, gpus_per_node))
      throw too_many_gpus(c.file(), pointer_append(at, "to"), to, gpus_per_node);
    for (std::int64_t n = from;; n *= 2) {
      counts.push_back(n);
      if (n > to / 2) break;  // the next doubling passes `to` (and might overflow)
    }
    return counts;
  }
  if (!value->is_array() || value->empty()) {
    throw c.mismatch("nodes", "a non-empty list of node counts or {\"from\": N, \"to\": M}",
                     !value->is_array());
  }
  for (std::size_t i = 0; i < value->size(); ++i) {
    const json& v = (*value)[i];
    const std::string item = pointer_append(at, i);
    if (!v.is_number_integer() || v.get<std::int64_t>() <= 0) {
      throw core::InputError(c.file(), item,
                             fmt::format("got {}; expected a positive integer", describe_value(v)));
    }
    const auto n = v.get<std::int64_t>();
    if (!core::checked_mul(n, gpus_per_node)) throw too_many_gpus(c.file(), item, n, gpus_per_node);
    if (!counts.empty() && n <= counts.back()) {
      throw core::InputError(
          c.file(), item,
          fmt::format("got {} after {}; expected node counts in ascending order", n, counts.back()));
    }
    counts.push_back(n);
  }
  return counts;
}

PlanBatch read_batch(ObjectReader& top) {
  PlanBatch b;
  std::optional<ObjectReader> r = top.optional_child("batch");
  if (!r) return b;
  r->expect_keys({"rule", "reference_gpus", "max_global_batch_size"});
  static constexpr std::array kRules{Choice<BatchRule>{"fixed", BatchRule::fixed},
                                     Choice<BatchRule>{"per_gpu", BatchRule::per_gpu}};
  b.rule = r->enum_value<BatchRule>("rule", kRules);
  if (b.rule == BatchRule::per_gpu) {
    b.reference_gpus = r->required<std::int64_t>("reference_gpus", IntRule::positive());
    b.max_global_batch_size = r->maybe<std::int64_t>("max_global_batch_size", IntRule::positive());
  }
  r->finish();
  return b;
}

// The global batch of `gpus` GPUs under the plan's rule; InputError at the rule when it is not whole.
std::int64_t global_batch_on(const PlanBatch& batch, std::int64_t stated, std::int64_t gpus,
                             const std::string& file, const std::string& where) {
  if (batch.rule == BatchRule::fixed) return stated;
  const std::optional<std::int64_t> product = core::checked_mul(stated, gpus);
  if (!product || *product % batch.reference_gpus != 0) {
    throw core::InputError(
        file, "/batch/reference_gpus",
        fmt::format("got {}; on {} ({} GPUs) the global batch {} x {} / {} is not a whole number; expected "
                    "a reference GPU count that divides {} x the GPU count of every candidate cluster",
                    batch.reference_gpus, where, gpus, stated, gpus, batch.reference_gpus, stated));
  }
  const std::int64_t scaled = *product / batch.reference_gpus;
  return batch.max_global_batch_size ? std::min(scaled, *batch.max_global_batch_size) : scaled;
}

struct StatedPrice {
  PriceBasis basis = PriceBasis::gpu_hour;
  double usd = 0.0;
  std::string source;
};

// The candidate's price: an override for its node, else its own key with "price_source", else its node
// profile's.
StatedPrice read_price(ObjectReader& c, const NodeProfile& node, std::span<const PriceOverride> prices) {
  const std::optional<double> per_gpu = c.maybe<double>("usd_per_gpu_hour", NumberRule::positive());
  const std::optional<double> per_node = c.maybe<double>("usd_per_node_hour", NumberRule::positive());
  if (per_gpu && per_node) {
    throw c.error_at("usd_per_node_hour",
                     "both \"usd_per_gpu_hour\" and \"usd_per_node_hour\" given; expected one of them");
  }
  const auto override_it = std::find_if(prices.begin(), prices.end(),
                                        [&](const PriceOverride& p) { return p.node_id == node.id; });
  std::optional<std::string> source;
  if (per_gpu || per_node) source = c.required<std::string>("price_source");
  else if (c.has("price_source")) source = c.required<std::string>("price_source");
  if (override_it != prices.end()) {
    return {override_it->basis, override_it->usd, fmt::format("command line: {}", override_it->option)};
  }
  if (per_gpu) return {PriceBasis::gpu_hour, *per_gpu, *source};
  if (per_node) return {PriceBasis::node_hour, *per_node, *source};
  if (node.usd_per_node_hour) {
    return {PriceBasis::node_hour, *node.usd_per_node_hour,
            fmt::format("node profile {}: {}", node.id, node.price_source)};
  }
  throw c.error_here(fmt::format(
      "no price for node \"{}\"; expected \"usd_per_gpu_hour\" or \"usd_per_node_hour\" with "
      "\"price_source\" (its node profile states none), or --usd-per-gpu-hour / --usd-per-node-hour {}=USD",
      node.id, node.id));
}

// A DLRM's plan: its clusters are ranked by their best embedding plan (search/embedding_search.hpp),
// in samples.
void check_dlrm_plan(const Plan& plan, bool has_search, const std::string& source) {
  if (plan.tokens) {
    throw core::InputError(source, "/tokens",
                           "a DLRM trains on samples, not tokens: give \"samples\" (or \"steps\")");
  }
  if (has_search) {
    throw core::InputError(source, "/search",
                           "search bounds limit a transformer's parallel degrees; a DLRM's clusters are searched "
                           "over every embedding plan (docs/dlrm.md, \"Searching plans\"): leave the key out");
  }
  if (plan.failures && plan.failures->recovery != Recovery::restart) {
    throw core::InputError(source, "/failures/recovery",
                           plan.failures->recovery == Recovery::elastic ? kElasticRefused : kRerouteRefused);
  }
}

}  // namespace

PriceOverride parse_price_override(const std::string& text, PriceBasis basis) {
  const std::size_t eq = text.find('=');
  const std::string option = price_option(basis);
  const std::string pointer = "/" + option;
  const auto bad = [&] {
    return core::InputError("command line", pointer,
                            fmt::format("got \"{}\"; expected NODE=USD, a node profile id and a positive "
                                        "price per {}",
                                        text, basis == PriceBasis::gpu_hour ? "GPU-hour" : "node-hour"));
  };
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size()) throw bad();
  const std::string number = text.substr(eq + 1);
  char* end = nullptr;
  const double usd = std::strtod(number.c_str(), &end);
  if (end != number.c_str() + number.size() || !(usd > 0.0) || usd > 1e12) throw bad();
  return {text.substr(0, eq), basis, usd, fmt::format("--{} {}", option, text)};
}

Plan load_plan_text(const std::string& text, const std::string& source, const DataPaths& data,
                    std::span<const PriceOverride> prices) {
  const json doc = parse_json_text(text, source);
  ObjectReader top(doc, source, "");
  if (!top.has("schema_version")) throw top.mismatch("schema_version", "1");
  const std::int64_t version = top.required<std::int64_t>("schema_version", IntRule::any());
  if (version != kPlanSchemaVersion) {
    throw top.error_at(
        "schema_version",
        fmt::format("unsupported plan schema_version {}; this dtsim reads {}", version, kPlanSchemaVersion));
  }
  top.expect_keys({"schema_version", "name", "model", "training", "parallelism", "simulation", "input", "tokens",
                   "samples", "steps", "deadline_days", "budget_usd", "candidates", "search", "batch", "failures"});
  for (std::size_t i = 0; i < prices.size(); ++i) {
    for (std::size_t k = 0; k < i; ++k) {
      if (prices[k].node_id == prices[i].node_id) {
        throw core::InputError("command line", fmt::format("/{}", price_option(prices[i].basis)),
                               fmt::format("got \"{}\" after \"{}\"; expected one price per node",
                                           prices[i].option, prices[k].option));
      }
    }
  }
  Plan plan;
  plan.source = source;
  plan.name = top.required<std::string>("name");
  plan.tokens = top.maybe<double>("tokens", NumberRule::positive());
  plan.samples = top.maybe<double>("samples", NumberRule::positive());
  plan.steps = top.maybe<std::int64_t>("steps", IntRule::positive());
  const int targets = int{plan.tokens.has_value()} + int{plan.samples.has_value()} + int{plan.steps.has_value()};
  if (targets != 1) {
    throw top.error_here(fmt::format("{} of \"tokens\", \"samples\" and \"steps\" given; expected one of them",
                                     targets == 0 ? "none" : "more than one"));
  }
  plan.deadline_days = top.maybe<double>("deadline_days", NumberRule::positive());
  plan.budget_usd = top.maybe<double>("budget_usd", NumberRule::positive());
  const bool top_has_search = top.has("search");
  plan.search = read_search(top);
  plan.batch = read_batch(top);
  plan.failures = read_failures(top, data.hardware_profiles, {.run_length_allowed = false});
  // Scenario keys are checked by the scenario loader below, with the same pointers as in the plan.
  top.child("model");
  ObjectReader training = top.child("training");
  // A one-GPU measurement holds for one GPU kind and micro-batch; a plan varies both.
  if (training.has("measured_single_gpu")) {
    throw training.error_at(
        "measured_single_gpu",
        "a one-GPU measurement holds for one GPU kind and micro-batch, which a plan varies; "
        "expected no such key (run the chosen plan's scenario with it)");
  }
  json scenario_keys = json::object();
  for (const char* key : {"model", "training", "parallelism", "simulation", "input"}) {
    if (const json* v = top.find(key)) scenario_keys[key] = *v;
  }
  std::int64_t stated_batch = 0;
  if (plan.batch.rule == BatchRule::per_gpu) {
    stated_batch = training.required<std::int64_t>("global_batch_size", IntRule::positive());
  }

  const json* candidates = top.find("candidates");
  if (candidates == nullptr || !candidates->is_array() || candidates->empty()) {
    if (candidates == nullptr) throw top.mismatch("candidates", "a non-empty list of candidate clusters");
    throw top.mismatch("candidates", "a non-empty list of candidate clusters", !candidates->is_array());
  }
  top.finish();
  for (std::size_t i = 0; i < candidates->size(); ++i) {
    ObjectReader c((*candidates)[i], source, pointer_append("/candidates", i));
    c.expect_keys({"node", "fabric", "nic_gbps", "nics_per_node", "usd_per_gpu_hour", "usd_per_node_hour",
                   "price_source", "nodes"});
    const std::string node_id = c.required<std::string>("node");
    const NodeProfile node = load_node_profile(data.hardware_profiles, node_id,
                                               IdLocation{source, pointer_append(c.pointer(), "node")});
    const std::string fabric = c.optional<std::string>("fabric", node.fabric);
    load_fabric_profile(data.hardware_profiles, fabric,
                        IdLocation{source, pointer_append(c.pointer(), "fabric")});
    const std::optional<double> nic_gbps = c.maybe<double>("nic_gbps", NumberRule::positive());
    const std::optional<std::int64_t> nics = c.maybe<std::int64_t>("nics_per_node", IntRule::positive());
    const StatedPrice price = read_price(c, node, prices);
    const double usd_per_gpu_hour =
        price.basis == PriceBasis::gpu_hour ? price.usd : price.usd / node.gpus_per_node;
    const std::vector<std::int64_t> counts = read_node_counts(c, node.gpus_per_node);
    c.finish();
    for (const std::int64_t nodes : counts) {
      json s = scenario_keys;
      s["schema_version"] = 1;
      s["name"] = fmt::format("{}: {} x {} ({})", plan.name, nodes, node_id, fabric);
      json network = {{"fabric", fabric}};
      if (nic_gbps) network["nic_gbps"] = *nic_gbps;
      if (nics) network["nics_per_node"] = *nics;
      s["cluster"] = {{"node", node_id}, {"nodes", nodes}, {"network", network}};
      if (plan.batch.rule != BatchRule::fixed) {
        s["training"]["global_batch_size"] =
            global_batch_on(plan.batch, stated_batch, nodes * node.gpus_per_node, source,
                            fmt::format("{} x {}", nodes, node_id));
      }
      plan.clusters.push_back({i, node_id, fabric, usd_per_gpu_hour, price.basis, price.usd, price.source,
                               load_scenario_text(s.dump(), source, data)});
      if (plan.clusters.back().scenario.dlrm) check_dlrm_plan(plan, top_has_search, source);
    }
  }
  for (const PriceOverride& p : prices) {
    if (std::none_of(plan.clusters.begin(), plan.clusters.end(),
                     [&](const PlanCluster& c) { return c.node_id == p.node_id; })) {
      throw core::InputError("command line", fmt::format("/{}", price_option(p.basis)),
                             fmt::format("got \"{}\" for node \"{}\", which no candidate of {} uses",
                                         p.option, p.node_id, source));
    }
  }
  return plan;
}

}  // namespace dtsim::config
