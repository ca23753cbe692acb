#include "parallel/reroute.hpp"

#include <algorithm>
#include <array>
#include <functional>
#include <queue>
#include <set>
#include <tuple>

#include <fmt/format.h>

#include "core/errors.hpp"

namespace dtsim::parallel {

// Named, not anonymous: unity builds put several files in one translation unit.
namespace reroute_planning {

enum PassSlot : int { kF = 0, kB = 1, kW = 2 };

// The list schedule over stage replicas (index d * p + s).
class ListSchedule {
 public:
  ListSchedule(std::int64_t data, std::int64_t stages, std::int64_t micro_batches, bool split,
               std::vector<std::int64_t> executor, std::vector<std::int64_t> in_flight,
               const std::vector<StageCost>& costs)
      : d_(data),
        p_(stages),
        m_(micro_batches),
        split_(split),
        executor_(std::move(executor)),
        cap_(std::move(in_flight)),
        costs_(costs),
        deps_(static_cast<std::size_t>(d_ * p_ * m_ * 3), 0),
        ready_(static_cast<std::size_t>(d_ * p_)),
        busy_(static_cast<std::size_t>(d_ * p_), 0),
        held_(static_cast<std::size_t>(d_ * p_), 0),
        order_(static_cast<std::size_t>(d_ * p_)) {}

  // Per executing replica: (owner replica, step) in the order started.
  std::vector<std::vector<std::pair<std::int64_t, PipelineStep>>> run() {
    std::int64_t remaining = 0;
    for (std::int64_t rep = 0; rep < d_ * p_; ++rep) {
      const std::int64_t s = rep % p_;
      for (std::int64_t mb = 0; mb < m_; ++mb) {
        deps_[item(rep, mb, kF)] = s > 0 ? 1 : 0;
        deps_[item(rep, mb, kB)] = s + 1 < p_ ? 2 : 1;
        remaining += 2;
        if (split_) {
          deps_[item(rep, mb, kW)] = 1;
          ++remaining;
        }
        if (s == 0) make_ready(rep, mb, kF);
      }
    }
    double now = 0.0;
    std::int64_t relaxed = 0;
    for (;;) {
      for (const std::int64_t e : dirty_) start_next(e, now, remaining);
      dirty_.clear();
      if (events_.empty()) {
        if (remaining == 0) break;
        // Every replica waits: let each hold one more micro-batch (see reroute.hpp).
        DTSIM_CHECK(++relaxed <= m_ * d_ + 1, "re-routing list schedule does not progress");
        for (std::int64_t& cap : cap_) ++cap;
        for (std::int64_t e = 0; e < d_ * p_; ++e) dirty_.insert(e);
        continue;
      }
      now = std::get<0>(events_.top());
      while (!events_.empty() && std::get<0>(events_.top()) == now) {
        const std::size_t done = std::get<2>(events_.top());
        const std::int64_t e = std::get<3>(events_.top());
        events_.pop();
        busy_[static_cast<std::size_t>(e)] = 0;
        dirty_.insert(e);
        finish(done);
      }
    }
    return std::move(order_);
  }

 private:
  using Key = std::tuple<std::int64_t, std::int64_t, std::size_t>;  // micro-batch, data, item

  std::size_t item(std::int64_t rep, std::int64_t mb, int pass) const {
    return static_cast<std::size_t>((rep * m_ + mb) * 3 + pass);
  }
  std::int64_t exec(std::int64_t rep, std::int64_t mb) const {
    return executor_[static_cast<std::size_t>(rep * m_ + mb)];
  }

  void make_ready(std::int64_t rep, std::int64_t mb, int pass) {
    const std::int64_t e = exec(rep, mb);
    ready_[static_cast<std::size_t>(e)][pass].insert(Key{mb, rep / p_, item(rep, mb, pass)});
    dirty_.insert(e);
  }

  void satisfy(std::int64_t rep, std::int64_t mb, int pass) {
    if (--deps_[item(rep, mb, pass)] == 0) make_ready(rep, mb, pass);
  }

  void finish(std::size_t done) {
    const auto pass = static_cast<int>(done % 3);
    const auto rep = static_cast<std::int64_t>(done / 3) / m_;
    const auto mb = static_cast<std::int64_t>(done / 3) % m_;
    const std::int64_t s = rep % p_;
    if (pass == kF) {
      if (s + 1 < p_) satisfy(rep + 1, mb, kF);
      satisfy(rep, mb, kB);
    } else if (pass == kB) {
      --held_[static_cast<std::size_t>(exec(rep, mb))];
      if (s > 0) satisfy(rep - 1, mb, kB);
      if (split_) satisfy(rep, mb, kW);
    }
  }

  void start_next(std::int64_t e, double now, std::int64_t& remaining) {
    const auto ei = static_cast<std::size_t>(e);
    if (busy_[ei] != 0) return;
    auto& ready = ready_[ei];
    const std::int64_t stage = e % p_;
    int pass = -1;
    if (!ready[kB].empty()) {
      pass = kB;
    } else if (!ready[kF].empty() && held_[ei] < cap_[static_cast<std::size_t>(stage)]) {
      pass = kF;
    } else if (!ready[kW].empty()) {
      pass = kW;
    }
    if (pass < 0) return;
    const Key key = *ready[pass].begin();
    ready[pass].erase(ready[pass].begin());
    const std::size_t it = std::get<2>(key);
    const auto rep = static_cast<std::int64_t>(it / 3) / m_;
    const StageCost& c = costs_[static_cast<std::size_t>(stage)];
    double cost = c.forward;
    Pass kind = Pass::forward;
    if (pass == kF) {
      ++held_[ei];
    } else if (pass == kB) {
      cost = split_ ? c.input_grad : c.input_grad + c.weight_grad;
      kind = split_ ? Pass::input_grad : Pass::backward;
    } else {
      cost = c.weight_grad;
      kind = Pass::weight_grad;
    }
    busy_[ei] = 1;
    --remaining;
    order_[ei].emplace_back(rep, PipelineStep{kind, static_cast<std::int32_t>(std::get<0>(key)), 0});
    events_.emplace(now + std::max(cost, 1e-9), seq_++, it, e);
  }

  std::int64_t d_, p_, m_;
  bool split_;
  std::vector<std::int64_t> executor_;  // per (replica, micro-batch)
  std::vector<std::int64_t> cap_;       // per stage
  const std::vector<StageCost>& costs_;
  std::vector<std::int32_t> deps_;                   // per item: inputs not yet done
  std::vector<std::array<std::set<Key>, 3>> ready_;  // per executor and pass
  std::vector<std::uint8_t> busy_;
  std::vector<std::int64_t> held_;  // per executor: micro-batches between F and B
  std::vector<std::vector<std::pair<std::int64_t, PipelineStep>>> order_;
  std::set<std::int64_t> dirty_;  // executors to try, in order
  std::uint64_t seq_ = 0;
  // Completions: (time, sequence, item, executor), earliest first.
  std::priority_queue<std::tuple<double, std::uint64_t, std::size_t, std::int64_t>,
                      std::vector<std::tuple<double, std::uint64_t, std::size_t, std::int64_t>>,
                      std::greater<>>
      events_;
};

}  // namespace reroute_planning

std::vector<StageReplica> replicas_on_nodes(const Mesh& mesh, const std::vector<std::int64_t>& nodes) {
  std::vector<StageReplica> out;
  for (std::int64_t r = 0; r < mesh.size(); ++r) {
    if (std::find(nodes.begin(), nodes.end(), mesh.node_of(r)) == nodes.end()) continue;
    const Coord c = mesh.coord_of(r);
    const StageReplica replica{c.data, c.stage};
    if (std::find(out.begin(), out.end(), replica) == out.end()) out.push_back(replica);
  }
  return out;
}

Reroute plan_reroute(const Mesh& mesh, std::int64_t micro_batches, bool split_backward,
                     const std::vector<StageReplica>& down, const std::vector<std::int64_t>& in_flight,
                     const std::vector<StageCost>& costs) {
  using config::MeshDim;
  const std::int64_t p = mesh.degree(MeshDim::pipeline);
  const std::int64_t d = mesh.degree(MeshDim::data);
  const std::int64_t m = micro_batches;
  DTSIM_CHECK(
      static_cast<std::int64_t>(in_flight.size()) == p && static_cast<std::int64_t>(costs.size()) == p,
      "plan_reroute: one in-flight limit and one cost per stage expected");
  Reroute out;
  out.micro_batches = m;
  const std::int64_t ranks = mesh.size();
  out.down.assign(static_cast<std::size_t>(ranks), 0);
  std::vector<std::uint8_t> replica_down(static_cast<std::size_t>(d * p), 0);
  for (const StageReplica& r : down) {
    DTSIM_CHECK(r.data >= 0 && r.data < d && r.stage >= 0 && r.stage < p,
                "plan_reroute: no such stage replica");
    replica_down[static_cast<std::size_t>(r.data * p + r.stage)] = 1;
  }
  // Each down replica's micro-batches to the live replica of its stage with the fewest adopted so far.
  std::vector<std::int64_t> executor(static_cast<std::size_t>(d * p * m));
  std::vector<std::int64_t> load(static_cast<std::size_t>(d * p), 0);
  out.adopted.assign(static_cast<std::size_t>(p), 0);
  for (std::int64_t s = 0; s < p; ++s) {
    std::vector<std::int64_t> live;
    for (std::int64_t k = 0; k < d; ++k) {
      if (replica_down[static_cast<std::size_t>(k * p + s)] == 0) live.push_back(k * p + s);
    }
    if (live.empty()) {
      throw core::InfeasibleError(
          fmt::format("re-routing needs a live replica of every pipeline stage: stage {} has none of its {} "
                      "data-parallel replicas on nodes that are up",
                      s, d));
    }
    for (std::int64_t k = 0; k < d; ++k) {
      const std::int64_t rep = k * p + s;
      for (std::int64_t mb = 0; mb < m; ++mb) {
        std::int64_t to = rep;
        if (replica_down[static_cast<std::size_t>(rep)] != 0) {
          to = *std::min_element(live.begin(), live.end(), [&](std::int64_t a, std::int64_t b) {
            return load[static_cast<std::size_t>(a)] < load[static_cast<std::size_t>(b)];
          });
          ++load[static_cast<std::size_t>(to)];
        }
        executor[static_cast<std::size_t>(rep * m + mb)] = to;
      }
    }
    for (const std::int64_t rep : live)
      out.adopted[static_cast<std::size_t>(s)] =
          std::max(out.adopted[static_cast<std::size_t>(s)], load[static_cast<std::size_t>(rep)]);
  }
  std::vector<std::int64_t> caps;
  for (const std::int64_t c : in_flight) caps.push_back(std::max<std::int64_t>(1, c));
  reroute_planning::ListSchedule schedule(d, p, m, split_backward && p > 1, executor, caps, costs);
  const auto order = schedule.run();

  out.steps.assign(static_cast<std::size_t>(ranks), {});
  out.executor.assign(static_cast<std::size_t>(ranks * m), 0);
  for (std::int64_t r = 0; r < ranks; ++r) {
    const Coord c = mesh.coord_of(r);
    const std::int64_t rep = c.data * p + c.stage;
    const auto rank_of_replica = [&](std::int64_t replica) {
      Coord at = c;
      at.data = replica / p;
      return mesh.rank_of(at);
    };
    for (std::int64_t mb = 0; mb < m; ++mb)
      out.executor[static_cast<std::size_t>(r * m + mb)] =
          rank_of_replica(executor[static_cast<std::size_t>(rep * m + mb)]);
    if (replica_down[static_cast<std::size_t>(rep)] != 0) {
      out.down[static_cast<std::size_t>(r)] = 1;
      continue;
    }
    auto& steps = out.steps[static_cast<std::size_t>(r)];
    for (const auto& [owner, step] : order[static_cast<std::size_t>(rep)])
      steps.push_back(RoutedStep{rank_of_replica(owner), step});
  }
  return out;
}

}  // namespace dtsim::parallel
