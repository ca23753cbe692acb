#include "models/failures/goodput.hpp"

#include <algorithm>
#include <cmath>
#include <deque>
#include <functional>
#include <limits>
#include <queue>
#include <random>
#include <utility>

#include <fmt/format.h>

#include "core/errors.hpp"
#include "core/nearest_rank.hpp"
#include "core/units.hpp"

namespace dtsim::models {

// Named, not anonymous: unity builds put several files in one translation unit.
namespace whole_run {

using core::TimeNs;

constexpr double kSecondsPer1000Days = 1000.0 * 86400.0;
constexpr TimeNs kNever = std::numeric_limits<TimeNs>::max();
// Events all runs together may take (failures, repairs, checkpoint cycles between them) before the
// estimate is given up: a failure rate that outruns every checkpoint never finishes, and one that barely
// does would take minutes.
constexpr std::int64_t kMaxEvents = 50'000'000;

struct Category {
  double rate_per_s = 0.0;
  bool takes_node = false;
  TimeNs restart_ns = 0;  // restart plus the checkpoint's read
  bool slows = false;     // a slowdown for slow_ns at `pace`, not a stop
  TimeNs slow_ns = 0;
  double pace = 1.0;
};

class Random {
 public:
  explicit Random(std::uint64_t seed) : engine_(seed) {}
  // In [0, 1), 53 random bits.
  double uniform() { return static_cast<double>(engine_() >> 11) * 0x1.0p-53; }
  double exponential_s(double rate_per_s) { return -std::log1p(-uniform()) / rate_per_s; }

 private:
  std::mt19937_64 engine_;
};

enum class Phase { training, checkpoint, restart, waiting, reconfigure };

struct RunTotals {
  double wall_s = 0.0;
  double lost_s = 0.0;
  double degraded_s = 0.0;
  double restart_s = 0.0;
  double wait_s = 0.0;
  double checkpoint_s = 0.0;
  double reconfigure_s = 0.0;
  std::vector<std::int64_t> failures;  // by category
  bool finished = true;
};

// The fixed facts of every run.
struct Setup {
  const GoodputInput* in = nullptr;
  std::vector<Category> categories;
  double total_rate_per_s = 0.0;
  double total_work_ns = 0.0;
  double interval_work_ns = 0.0;
  TimeNs stall_ns = 0;
  TimeNs write_ns = 0;
  TimeNs repair_ns = 0;  // 0: repairs not tracked (unlimited spares)
  TimeNs reconfigure_ns = 0;
  TimeNs read_ns = 0;
  bool track_nodes = false;
  bool elastic = false;  // elastic or re-routing: the job may train on without a node
  bool reroute = false;
};

TimeNs to_ns(double s) { return static_cast<TimeNs>(std::llround(s * core::kNsPerS)); }
double to_s(double ns) { return ns / core::kNsPerS; }

class Run {
 public:
  Run(const Setup& setup, std::uint64_t seed, std::int64_t& events_left)
      : s_(setup),
        in_(*setup.in),
        random_(seed),
        events_left_(events_left),
        next_checkpoint_(setup.interval_work_ns) {
    totals_.failures.assign(s_.categories.size(), 0);
    slow_active_.assign(s_.categories.size(), 0);
    if (in_.spec->spare_nodes) spares_ = *in_.spec->spare_nodes;
    if (s_.elastic) {
      node_down_.assign(static_cast<std::size_t>(in_.nodes), 0);
      replica_down_.assign(static_cast<std::size_t>(in_.replicas), 0);
      live_per_stage_.assign(static_cast<std::size_t>(in_.stages), in_.replicas / in_.stages);
    }
    active_ = in_.replicas;
    next_failure_ = draw_failure(0);
  }

  RunTotals simulate() {
    for (;; --events_left_) {
      if (events_left_ <= 0) return unfinished();
      const TimeNs repair = repairs_.empty() ? kNever : repairs_.top().first;
      const TimeNs fixed = slowdowns_.empty() ? kNever : slowdowns_.top().first;
      const TimeNs end = phase_end();
      const TimeNs failure = phase_ == Phase::waiting ? kNever : next_failure_;
      const TimeNs next = std::min({repair, fixed, end, failure});
      if (next == kNever || next > core::kMaxTimeNs) return unfinished();
      advance(next);
      while (!pending_.empty() && pending_.front().first <= t_) {
        durable_ = pending_.front().second;
        pending_.pop_front();
      }
      if (next == repair) {
        const std::int32_t node = repairs_.top().second;
        repairs_.pop();
        on_repair(node);
      } else if (next == fixed) {
        --slow_active_[slowdowns_.top().second];
        slowdowns_.pop();
      } else if (next == end) {
        if (phase_ == Phase::training && work_ >= s_.total_work_ns) break;
        on_phase_end();
      } else {
        on_failure();
      }
    }
    totals_.wall_s = to_s(static_cast<double>(t_));
    return totals_;
  }

 private:
  double pace() const {
    double slowest = 1.0;
    for (std::size_t c = 0; c < slow_active_.size(); ++c) {
      if (slow_active_[c] > 0) slowest = std::min(slowest, s_.categories[c].pace);
    }
    return recovery_pace_ * slowest;
  }

  // Elastic: the active replicas' share; re-routing: the re-routed plan's pace with the nodes down.
  void update_recovery_pace() {
    if (!s_.reroute) {
      recovery_pace_ = static_cast<double>(active_) / static_cast<double>(in_.replicas);
    } else if (nodes_down_ == 0) {
      recovery_pace_ = 1.0;
    } else {
      recovery_pace_ = uncovered_ > 0 ? 0.0 : std::clamp(in_.reroute_pace(down_nodes()), 0.0, 1.0);
    }
  }
  std::vector<std::int64_t> down_nodes() const {
    std::vector<std::int64_t> out;
    for (std::size_t n = 0; n < node_down_.size(); ++n) {
      if (node_down_[n] > 0) out.push_back(static_cast<std::int64_t>(n));
    }
    return out;
  }
  // Whether the job can train on the nodes that are up (else it waits for a repair).
  bool can_train() const { return recovery_pace_ > 0.0; }

  TimeNs draw_failure(TimeNs from) const {
    const double s = random_.exponential_s(s_.total_rate_per_s);
    const double at = static_cast<double>(from) + s * core::kNsPerS;
    return at >= static_cast<double>(core::kMaxTimeNs) ? kNever : static_cast<TimeNs>(at);
  }

  TimeNs phase_end() const {
    if (phase_ == Phase::waiting) return kNever;
    if (phase_ != Phase::training) return phase_until_;
    const double target = std::min(next_checkpoint_, s_.total_work_ns);
    const double remaining_wall = (target - work_) / pace();
    if (!(remaining_wall < static_cast<double>(core::kMaxTimeNs))) return kNever;
    return t_ + static_cast<TimeNs>(std::ceil(std::max(remaining_wall, 0.0)));
  }

  void advance(TimeNs next) {
    const double dt = static_cast<double>(next - t_);
    switch (phase_) {
      case Phase::training: {
        const double p = pace();
        work_ = std::min(work_ + dt * p, phase_end_target());
        totals_.degraded_s += to_s(dt * (1.0 - p));
        break;
      }
      case Phase::checkpoint:
        totals_.checkpoint_s += to_s(dt);
        break;
      case Phase::restart:
        totals_.restart_s += to_s(dt);
        break;
      case Phase::waiting:
        totals_.wait_s += to_s(dt);
        break;
      case Phase::reconfigure:
        totals_.reconfigure_s += to_s(dt);
        break;
    }
    t_ = next;
  }
  // Training never runs past the next checkpoint or the end (the ceil of phase_end overshoots by < 1 ns).
  double phase_end_target() const { return std::min(next_checkpoint_, s_.total_work_ns); }

  void start(Phase phase, TimeNs duration) {
    phase_ = phase;
    phase_until_ = t_ + duration;
  }

  void on_phase_end() {
    switch (phase_) {
      case Phase::training:
        skip_whole_cycles();
        if (work_ >= s_.total_work_ns) return;
        checkpoint_work_ = work_;
        next_checkpoint_ = work_ + s_.interval_work_ns;
        start(Phase::checkpoint, s_.stall_ns);
        return;
      case Phase::checkpoint:
        if (in_.spec->checkpoint.asynchronous) {
          pending_.emplace_back(t_ + s_.write_ns, checkpoint_work_);
        } else {
          durable_ = checkpoint_work_;
        }
        phase_ = Phase::training;
        return;
      case Phase::restart:
      case Phase::reconfigure:
        phase_ = Phase::training;
        return;
      case Phase::waiting:
        return;  // left on a repair
    }
  }

  // At a checkpoint boundary: the whole cycles (checkpoint, then an interval of training) that end before
  // the next failure or repair run as one step; the last one's checkpoint starts as usual.
  void skip_whole_cycles() {
    const double p = pace();
    const double cycle = static_cast<double>(s_.stall_ns) + s_.interval_work_ns / p;
    const TimeNs repair = repairs_.empty() ? kNever : repairs_.top().first;
    const TimeNs fixed = slowdowns_.empty() ? kNever : slowdowns_.top().first;
    const double horizon = static_cast<double>(std::min({repair, fixed, next_failure_}) - t_);
    const double to_end = (s_.total_work_ns - work_) / s_.interval_work_ns;
    const double cycles = std::floor(std::min(horizon / cycle, to_end - 1.0));
    if (!(cycles >= 1.0)) return;
    const TimeNs elapsed = static_cast<TimeNs>(cycles * cycle);
    totals_.checkpoint_s += to_s(cycles * static_cast<double>(s_.stall_ns));
    totals_.degraded_s += to_s(cycles * (s_.interval_work_ns / p) * (1.0 - p));
    work_ += cycles * s_.interval_work_ns;
    t_ += elapsed;
    next_checkpoint_ = work_;
    // The last cycle's checkpoint saved work_ - interval and is written by now: a synchronous one before
    // its cycle's training, an asynchronous one during it (the interval is at least one write).
    pending_.clear();
    durable_ = work_ - s_.interval_work_ns;
  }

  void roll_back() {
    totals_.lost_s += to_s(work_ - durable_);
    work_ = durable_;
    next_checkpoint_ = durable_ + s_.interval_work_ns;
    pending_.clear();
  }

  std::size_t pick_category() {
    double u = random_.uniform() * s_.total_rate_per_s;
    for (std::size_t i = 0; i < s_.categories.size(); ++i) {
      if (u < s_.categories[i].rate_per_s) return i;
      u -= s_.categories[i].rate_per_s;
    }
    return s_.categories.size() - 1;
  }

  // Never while waiting: no failure is drawn then (simulate()).
  void on_failure() {
    next_failure_ = draw_failure(t_);
    const std::size_t c = pick_category();
    ++totals_.failures[c];
    const Category& cat = s_.categories[c];
    if (cat.slows) {
      ++slow_active_[c];
      slowdowns_.emplace(t_ + cat.slow_ns, c);
      return;
    }
    if (s_.elastic && cat.takes_node) {
      lose_node(static_cast<std::int32_t>(std::min<double>(random_.uniform() * static_cast<double>(in_.nodes),
                                                           static_cast<double>(in_.nodes - 1))));
      if (!can_train()) {
        roll_back();
        waiting_restart_ns_ = cat.restart_ns;
        phase_ = Phase::waiting;
      } else if (!in_.replicas_hold_state) {
        roll_back();
        start(Phase::restart, s_.reconfigure_ns + s_.read_ns);
      } else if (phase_ == Phase::restart) {
        start(Phase::restart, cat.restart_ns);  // a node lost while restarting: start over
      } else {
        start(Phase::reconfigure, s_.reconfigure_ns);
      }
      return;
    }
    roll_back();
    if (cat.takes_node && s_.track_nodes) {
      repairs_.emplace(t_ + s_.repair_ns, -1);
      if (spares_ > 0) {
        --spares_;
      } else {
        waiting_restart_ns_ = cat.restart_ns;
        phase_ = Phase::waiting;
        return;
      }
    }
    start(Phase::restart, cat.restart_ns);
  }

  void on_repair(std::int32_t node) {
    if (!s_.elastic) {
      if (phase_ == Phase::waiting) {
        next_failure_ = draw_failure(t_);
        start(Phase::restart, waiting_restart_ns_);
      } else {
        ++spares_;
      }
      return;
    }
    const double before = recovery_pace_;
    std::int32_t& down = node_down_[static_cast<std::size_t>(node)];
    if (--down == 0) {
      --nodes_down_;
      for (const std::int32_t r : in_.node_replicas[static_cast<std::size_t>(node)]) {
        if (--replica_down_[static_cast<std::size_t>(r)] == 0) replica_up(r);
      }
      update_recovery_pace();
    }
    if (recovery_pace_ == before) return;
    if (phase_ == Phase::waiting) {
      if (!can_train()) return;
      next_failure_ = draw_failure(t_);
      start(Phase::restart, waiting_restart_ns_);
    } else if (phase_ == Phase::training) {
      start(Phase::reconfigure, s_.reconfigure_ns);
    }
  }

  void lose_node(std::int32_t node) {
    repairs_.emplace(t_ + s_.repair_ns, node);
    if (node_down_[static_cast<std::size_t>(node)]++ > 0) return;
    ++nodes_down_;
    for (const std::int32_t r : in_.node_replicas[static_cast<std::size_t>(node)]) {
      if (replica_down_[static_cast<std::size_t>(r)]++ == 0) replica_lost(r);
    }
    update_recovery_pace();
  }

  void replica_lost(std::int32_t r) {
    --active_;
    if (--live_per_stage_[static_cast<std::size_t>(r % in_.stages)] == 0) ++uncovered_;
  }
  void replica_up(std::int32_t r) {
    ++active_;
    if (live_per_stage_[static_cast<std::size_t>(r % in_.stages)]++ == 0) --uncovered_;
  }

  RunTotals unfinished() {
    totals_.finished = false;
    return totals_;
  }

  const Setup& s_;
  const GoodputInput& in_;
  mutable Random random_;
  std::int64_t& events_left_;
  RunTotals totals_;
  Phase phase_ = Phase::training;
  TimeNs t_ = 0;
  TimeNs phase_until_ = 0;
  TimeNs next_failure_ = 0;
  TimeNs waiting_restart_ns_ = 0;
  double work_ = 0.0;
  double durable_ = 0.0;
  double next_checkpoint_ = 0.0;
  double checkpoint_work_ = 0.0;
  std::deque<std::pair<TimeNs, double>> pending_;  // asynchronous writes: (written at, work saved)
  std::priority_queue<std::pair<TimeNs, std::int32_t>, std::vector<std::pair<TimeNs, std::int32_t>>,
                      std::greater<>>
      repairs_;  // (back at, node); node -1 for a spare pool's node
  std::int64_t spares_ = 0;
  std::int64_t active_ = 1;
  double recovery_pace_ = 1.0;
  std::int64_t nodes_down_ = 0;
  std::int64_t uncovered_ = 0;  // re-routing: stages without a live replica
  std::vector<std::int32_t> node_down_;
  std::vector<std::int32_t> replica_down_;
  std::vector<std::int64_t> live_per_stage_;
  std::vector<std::int32_t> slow_active_;  // by category: slowdowns under way
  std::priority_queue<std::pair<TimeNs, std::size_t>, std::vector<std::pair<TimeNs, std::size_t>>, std::greater<>>
      slowdowns_;  // (fixed at, category)
};

Spread spread_of(std::vector<double> values) {
  Spread s;
  if (values.empty()) return s;
  std::sort(values.begin(), values.end());
  s.p10 = core::nearest_rank(values, 0.1);
  s.p50 = core::nearest_rank(values, 0.5);
  s.p90 = core::nearest_rank(values, 0.9);
  double sum = 0.0;
  for (const double v : values) sum += v;
  s.mean = sum / static_cast<double>(values.size());
  return s;
}

double units_of(config::FailureUnit per, const GoodputInput& in) {
  switch (per) {
    case config::FailureUnit::gpu:
      return static_cast<double>(in.gpus);
    case config::FailureUnit::node:
      return static_cast<double>(in.nodes);
    case config::FailureUnit::job:
      return 1.0;
  }
  throw core::InternalError("units_of: invalid FailureUnit value");
}

}  // namespace whole_run

GoodputEstimate estimate_goodput(const GoodputInput& in) {
  using namespace whole_run;
  const config::FailureSpec& spec = *in.spec;
  if (spec.categories.empty() || !(in.iteration_s > 0.0) || !(in.failure_free_s > 0.0))
    throw core::InternalError("estimate_goodput: no categories, iteration time or run length");
  GoodputEstimate out;
  out.failure_free_s = in.failure_free_s;
  out.checkpoint = in.checkpoint;
  out.runs = spec.runs;

  Setup setup;
  setup.in = &in;
  setup.reroute = spec.recovery == config::Recovery::reroute;
  setup.elastic = spec.recovery == config::Recovery::elastic || setup.reroute;
  if (setup.reroute && (!in.reroute_pace || in.stages < 1 || in.replicas % in.stages != 0))
    throw core::InternalError("estimate_goodput: re-routing needs its pace and stage replicas");
  if (!in.category_pace.empty() && in.category_pace.size() != spec.categories.size())
    throw core::InternalError("estimate_goodput: one pace per category expected");
  double restart_weighted = 0.0;
  double stop_rate = 0.0;
  for (std::size_t i = 0; i < spec.categories.size(); ++i) {
    const config::FailureCategory& c = spec.categories[i];
    Category cat;
    cat.rate_per_s = c.failures_per_1000_days * units_of(c.per, in) / kSecondsPer1000Days;
    cat.slows = c.effect == config::FailureEffect::slow;
    if (cat.slows) {
      cat.slow_ns = to_ns(std::min(c.hours * 3600.0, static_cast<double>(core::kMaxDurationNs) / core::kNsPerS));
      cat.pace = in.category_pace.empty() ? 1.0 : std::clamp(in.category_pace[i], 1e-9, 1.0);
    } else {
      cat.takes_node = c.per != config::FailureUnit::job;
      const double restart = c.restart_s.value_or(spec.restart_s) + in.checkpoint.read_s;
      cat.restart_ns = to_ns(std::min(restart, static_cast<double>(core::kMaxDurationNs) / core::kNsPerS));
      stop_rate += cat.rate_per_s;
      restart_weighted += cat.rate_per_s * restart;
    }
    setup.total_rate_per_s += cat.rate_per_s;
    setup.categories.push_back(cat);
    out.category_names.push_back(c.name);
    out.category_pace.push_back(cat.pace);
  }
  out.failures_per_day = setup.total_rate_per_s * 86400.0;
  out.restart_s = stop_rate > 0.0 ? restart_weighted / stop_rate : spec.restart_s + in.checkpoint.read_s;
  out.mtbf_s = stop_rate > 0.0 ? 1.0 / stop_rate : 0.0;

  // The interval: the scenario's, or Daly's optimum; whole iterations, at least one, and for asynchronous
  // checkpoints at least one write (one write at a time).
  double interval = 0.0;
  if (spec.checkpoint.interval_s) {
    interval = *spec.checkpoint.interval_s;
  } else if (stop_rate > 0.0) {
    interval = daly_optimal_interval_s(in.checkpoint.stall_s, out.mtbf_s);
    out.interval_optimal = true;
  } else {
    interval = in.failure_free_s;
  }
  if (spec.checkpoint.asynchronous) interval = std::max(interval, in.checkpoint.write_s);
  interval = std::max(1.0, std::ceil(interval / in.iteration_s)) * in.iteration_s;
  out.interval_s = interval;
  out.closed_form_ettr = expected_ettr(stop_rate, out.restart_s, in.checkpoint.stall_s, interval);

  if (setup.total_rate_per_s == 0.0) {
    // Nothing fails: every run is the failure-free time plus its checkpoints.
    const double checkpoints = std::ceil(in.failure_free_s / interval) - 1.0;
    const double wall = in.failure_free_s + checkpoints * in.checkpoint.stall_s;
    out.wall_s = {wall, wall, wall, wall};
    out.goodput = {in.failure_free_s / wall, in.failure_free_s / wall, in.failure_free_s / wall,
                   in.failure_free_s / wall};
    out.checkpoint_total_s = checkpoints * in.checkpoint.stall_s;
    out.category_failures.assign(spec.categories.size(), 0.0);
    return out;
  }

  // Every time of the run in nanoseconds stays within the simulated clock (core/units.hpp).
  const double clock_s = static_cast<double>(core::kMaxTimeNs) / core::kNsPerS;
  double longest = std::max({in.failure_free_s, interval, in.checkpoint.write_s, in.checkpoint.read_s,
                             spec.reconfigure_s, spec.repair_hours.value_or(0.0) * 3600.0});
  for (const auto& c : spec.categories) longest = std::max(longest, c.restart_s.value_or(spec.restart_s));
  if (!(longest + in.checkpoint.read_s < clock_s)) {
    out.reason = fmt::format("the run does not finish within the simulated clock ({:.3g} years): a time of {:.3g} s",
                             clock_s / (365.0 * 86400.0), longest);
    return out;
  }
  setup.total_work_ns = in.failure_free_s * core::kNsPerS;
  setup.interval_work_ns = interval * core::kNsPerS;
  setup.stall_ns = to_ns(in.checkpoint.stall_s);
  setup.write_ns = to_ns(in.checkpoint.write_s);
  setup.read_ns = to_ns(in.checkpoint.read_s);
  setup.reconfigure_ns = to_ns(spec.reconfigure_s);
  setup.track_nodes = spec.spare_nodes.has_value() || setup.elastic;
  if (spec.repair_hours) setup.repair_ns = to_ns(*spec.repair_hours * 3600.0);

  std::vector<double> walls, goodputs, counts;
  out.category_failures.assign(spec.categories.size(), 0.0);
  std::int64_t events_left = kMaxEvents;
  for (std::int64_t r = 0; r < spec.runs; ++r) {
    Run run(setup, in.seed + static_cast<std::uint64_t>(r), events_left);
    const RunTotals t = run.simulate();
    if (!t.finished) {
      out.reason = fmt::format(
          "the run does not finish: {:.3g} failures per day and a restart of {:.3g} s leave too little time "
          "between failures to reach a checkpoint every {:.3g} s ({} runs stopped after {} million events)",
          out.failures_per_day, out.restart_s, interval, r + 1, kMaxEvents / 1'000'000);
      return out;
    }
    walls.push_back(t.wall_s);
    goodputs.push_back(in.failure_free_s / t.wall_s);
    std::int64_t n = 0;
    for (std::size_t c = 0; c < t.failures.size(); ++c) {
      n += t.failures[c];
      out.category_failures[c] += static_cast<double>(t.failures[c]);
    }
    counts.push_back(static_cast<double>(n));
    out.lost_work_s += t.lost_s;
    out.degraded_s += t.degraded_s;
    out.restart_total_s += t.restart_s;
    out.spare_wait_s += t.wait_s;
    out.checkpoint_total_s += t.checkpoint_s;
    out.reconfigure_total_s += t.reconfigure_s;
  }
  const double runs = static_cast<double>(spec.runs);
  for (double& c : out.category_failures) c /= runs;
  out.lost_work_s /= runs;
  out.degraded_s /= runs;
  out.restart_total_s /= runs;
  out.spare_wait_s /= runs;
  out.checkpoint_total_s /= runs;
  out.reconfigure_total_s /= runs;
  out.wall_s = spread_of(std::move(walls));
  out.goodput = spread_of(std::move(goodputs));
  out.failures = spread_of(std::move(counts));
  return out;
}

}  // namespace dtsim::models
