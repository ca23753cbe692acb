#include "engine/dp_training.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "core/errors.hpp"
#include "core/random.hpp"
#include "engine/event_queue.hpp"

namespace dtsim::engine {

namespace {

enum class Kind : std::uint32_t {
  compute_done,
  bucket_ready,
  allreduce_done,
  push_arrive,
  apply_done,
  server_updated,
  pull_arrive,
  optimizer_done,
  local_reduced,
  local_broadcast
};
constexpr std::uint32_t kIndexBits = 28;
static_assert(kMaxWorkerPairs == (std::int64_t{1} << kIndexBits));
constexpr std::uint32_t kIndexMask = (1u << kIndexBits) - 1;

std::uint32_t payload(Kind k, std::int64_t index) {
  return (static_cast<std::uint32_t>(k) << kIndexBits) | static_cast<std::uint32_t>(index);
}

class Simulation {
 public:
  explicit Simulation(const DpTrainingSetup& s)
      : s_(s),
        workers_(s.workers),
        servers_(static_cast<std::int64_t>(s.push_bytes.size())),
        buckets_(static_cast<std::int64_t>(s.bucket_allreduce_ns.size())) {
    DTSIM_CHECK(workers_ >= 1 && s.steps >= 2, "dp training needs a worker and two steps");
    DTSIM_CHECK(workers_ * std::max<std::int64_t>(servers_, buckets_) < (1 << kIndexBits),
                "too many workers x servers for the event encoding");
    std::int64_t nodes = (workers_ + s.gpus_per_node - 1) / s.gpus_per_node;
    for (const auto n : s.server_node) nodes = std::max(nodes, n + 1);
    egress_free_.assign(static_cast<std::size_t>(nodes), 0);
    ingress_free_.assign(static_cast<std::size_t>(nodes), 0);
    server_cpu_free_.assign(static_cast<std::size_t>(servers_), 0);
    server_io_free_.assign(static_cast<std::size_t>(servers_), 0);
    version_.assign(static_cast<std::size_t>(servers_), 0);
    arrivals_.assign(static_cast<std::size_t>(servers_), 0);
    DTSIM_CHECK(s.client_size >= 1 && workers_ % s.client_size == 0, "clients must split the workers evenly");
    clients_ = workers_ / s.client_size;
    client_io_free_.assign(static_cast<std::size_t>(clients_), 0);
    read_version_.assign(static_cast<std::size_t>(clients_ * servers_), 0);
    client_ready_.assign(static_cast<std::size_t>(clients_), 0);
    pending_pulls_.assign(static_cast<std::size_t>(clients_), 0);
    bucket_count_.assign(static_cast<std::size_t>(buckets_), 0);
    const auto w = static_cast<std::size_t>(workers_);
    clock_.assign(w, 0);
    step_start_.assign(w, 0);
    waiting_client_.assign(w, 0);
    allreduce_pending_.assign(w, 0);
    computing_.assign(w, 0);
    blocked_.assign(w, 0);
    first_done_.assign(w, 0);
    finished_.assign(w, 0);
    result_.workers.assign(w, DpWorkerStats{});
    load_end_.assign(w, 0);
    if (s.input_prefetch && s.input_load_ns > 0) {
      DTSIM_CHECK(s.input_prefetch_batches >= 1, "prefetching needs a buffer of a batch or more");
      // A ring of the last input_prefetch_batches steps' starts; a worker runs `steps` steps, so a deeper
      // buffer than that is never read back.
      const std::int64_t ring = std::min(s.input_prefetch_batches, s.steps);
      consumed_.assign(w, std::vector<core::TimeNs>(static_cast<std::size_t>(ring), 0));
    }
  }

  DpTrainingResult run() {
    at_min_ = workers_;
    for (std::int64_t w = 0; w < workers_; ++w) start_step(w, 0);
    core::TimeNs now = 0;
    while (!queue_.empty()) {
      const Event e = queue_.pop();
      now = e.time;
      ++result_.events;
      const auto index = static_cast<std::int64_t>(e.payload & kIndexMask);
      switch (static_cast<Kind>(e.payload >> kIndexBits)) {
        case Kind::compute_done:
          compute_done(index, now);
          break;
        case Kind::bucket_ready:
          bucket_ready(index % std::max<std::int64_t>(buckets_, 1), now);
          break;
        case Kind::allreduce_done:
          allreduce_done(now);
          break;
        case Kind::push_arrive:
          push_arrive(index / servers_, index % servers_, now);
          break;
        case Kind::apply_done:
          apply_done(index / servers_, index % servers_, now);
          break;
        case Kind::server_updated:
          server_updated(index, now);
          break;
        case Kind::pull_arrive:
          pull_arrive(index / servers_, now);
          break;
        case Kind::optimizer_done:
          step_complete(index, now);
          break;
        case Kind::local_reduced:
          push_all(index, now);
          break;
        case Kind::local_broadcast:
          client_done(index, now);
          break;
      }
    }
    result_.makespan = now;
    measure();
    return std::move(result_);
  }

 private:
  std::size_t at(std::int64_t i) const { return static_cast<std::size_t>(i); }
  std::int64_t node_of_client(std::int64_t c) const { return c * s_.client_size / s_.gpus_per_node; }

  // When worker w's batch for its next step is loaded, given that it is ready to train at `now`
  // (DpTrainingSetup: the input pipeline).
  core::TimeNs batch_ready(std::int64_t w, core::TimeNs now) {
    if (s_.input_load_ns == 0) return now;
    if (!s_.input_prefetch) return now + s_.input_load_ns;
    // The loader starts a batch once the previous one is loaded and a buffer slot is free: the batch
    // input_prefetch_batches before it has gone to training.
    const std::int64_t k = clock_[at(w)];
    const std::vector<core::TimeNs>& consumed = consumed_[at(w)];
    core::TimeNs start = load_end_[at(w)];
    if (k >= s_.input_prefetch_batches)
      start = std::max(start, consumed[static_cast<std::size_t>(k) % consumed.size()]);
    load_end_[at(w)] = start + s_.input_load_ns;
    return std::max(now, load_end_[at(w)]);
  }

  void start_step(std::int64_t w, core::TimeNs ready) {
    const core::TimeNs now = batch_ready(w, ready);
    // The warm-up step's wait (the first batch, loaded before anything runs) is not the steady state's.
    if (clock_[at(w)] > 0) result_.workers[at(w)].input_wait_s += core::ns_to_seconds(now - ready);
    if (!consumed_.empty()) {  // prefetching: the ring of the batches' starts (Simulation's constructor)
      std::vector<core::TimeNs>& consumed = consumed_[at(w)];
      consumed[static_cast<std::size_t>(clock_[at(w)]) % consumed.size()] = now;
    }
    const double factor = compute_factor(s_, w, clock_[at(w)]);
    const auto fwd = core::seconds_to_ns(core::ns_to_seconds(s_.forward_ns) * factor);
    const auto bwd = core::seconds_to_ns(core::ns_to_seconds(s_.backward_ns) * factor);
    step_start_[at(w)] = now;
    computing_[at(w)] = 1;
    result_.workers[at(w)].compute_s += core::ns_to_seconds(fwd + bwd);
    queue_.push(now + fwd + bwd, payload(Kind::compute_done, w));
    for (std::int64_t b = 0; b < buckets_; ++b) {
      const double offset = static_cast<double>(bwd) * s_.bucket_ready_fraction[at(b)];
      queue_.push(now + fwd + static_cast<core::TimeNs>(std::llround(offset)),
                  payload(Kind::bucket_ready, w * buckets_ + b));
    }
    allreduce_pending_[at(w)] = buckets_ > 0 ? 1 : 0;
  }

  // A transfer between client c and server `srv` from node a to node b (`to_server`: a push),
  // starting no earlier than `now`; returns its arrival time. The sender's egress and the receiver's
  // ingress are FIFO servers; the switch buffers between them, so the sender's port is free once it has
  // sent, and the receiver takes the bytes at its own pace. The parameter-server transport adds its
  // channel cap, the server process's FIFO and the receiving process's large-message time (all of them
  // inside a node too: the software stack is the same over loopback).
  core::TimeNs transfer(std::int64_t a, std::int64_t b, double bytes, core::TimeNs now, std::int64_t srv,
                        std::int64_t c, bool to_server) {
    core::TimeNs start = now;
    core::TimeNs end = now;
    core::TimeNs latency = 0;
    if (a == b) {
      end = now + core::seconds_to_ns(bytes / s_.intra_bytes_per_s);
    } else {
      const core::TimeNs duration = core::seconds_to_ns(bytes / s_.nic_bytes_per_s);
      start = std::max(now, egress_free_[at(a)]);
      const core::TimeNs send_end = start + duration;
      egress_free_[at(a)] = send_end;
      const core::TimeNs receive_start = std::max(start, ingress_free_[at(b)]);
      end = std::max(send_end, receive_start + duration);
      ingress_free_[at(b)] = end;
      // One transfer is one flow: it goes no faster than the fabric's per-flow cap even when the
      // ports could take more (they stay free for other flows meanwhile).
      if (s_.per_flow_bytes_per_s > 0.0)
        end = std::max(end, start + core::seconds_to_ns(bytes / s_.per_flow_bytes_per_s));
      latency = s_.message_latency_ns;
    }
    if (s_.channel_bytes_per_s > 0.0)
      end = std::max(end, start + core::seconds_to_ns(bytes / s_.channel_bytes_per_s));
    const double receive_s =
        s_.square_bytes.empty() ? 0.0 : s_.receive_s_per_square_byte * s_.square_bytes[at(srv)];
    double server_s = s_.server_transport_bytes_per_s > 0.0 ? bytes / s_.server_transport_bytes_per_s : 0.0;
    if (to_server) server_s += receive_s;
    if (server_s > 0.0) {
      core::TimeNs& io = server_io_free_[at(srv)];
      io = std::max(now, io) + core::seconds_to_ns(server_s);
      end = std::max(end, io);
    }
    if (!to_server && receive_s > 0.0) {
      core::TimeNs& io = client_io_free_[at(c)];
      io = std::max(now, io) + core::seconds_to_ns(receive_s);
      end = std::max(end, io);
    }
    return end + latency;
  }

  void compute_done(std::int64_t w, core::TimeNs now) {
    computing_[at(w)] = 0;
    if (servers_ > 0) {
      // The worker's client (itself, or its node with local aggregation) pushes once all its
      // workers are done, after summing their gradients inside the node.
      waiting_client_[at(w)] = 1;
      const std::int64_t c = w / s_.client_size;
      if (++client_ready_[at(c)] == s_.client_size) {
        client_ready_[at(c)] = 0;
        if (s_.local_reduce_ns > 0) {
          queue_.push(now + s_.local_reduce_ns, payload(Kind::local_reduced, c));
        } else {
          push_all(c, now);
        }
      }
    }
    maybe_finish(w, now);
  }

  void push_all(std::int64_t c, core::TimeNs now) {
    pending_pulls_[at(c)] = 0;
    // Pushes to all servers are issued together; client c starts with server c mod S so that the
    // clients' first pushes spread over the servers.
    for (std::int64_t i = 0; i < servers_; ++i) {
      const std::int64_t srv = (c + i) % servers_;
      const double bytes = s_.push_bytes[at(srv)];
      if (bytes <= 0.0) continue;
      ++pending_pulls_[at(c)];
      const core::TimeNs arrive =
          transfer(node_of_client(c), s_.server_node[at(srv)], bytes, now, srv, c, true);
      queue_.push(arrive, payload(Kind::push_arrive, c * servers_ + srv));
    }
    if (pending_pulls_[at(c)] == 0) client_done(c, now);
  }

  void client_done(std::int64_t c, core::TimeNs now) {
    for (std::int64_t w = c * s_.client_size; w < (c + 1) * s_.client_size; ++w) {
      waiting_client_[at(w)] = 0;
      maybe_finish(w, now);
    }
  }

  void bucket_ready(std::int64_t b, core::TimeNs now) {
    if (++bucket_count_[at(b)] < workers_) return;
    bucket_count_[at(b)] = 0;
    comm_free_ = std::max(now, comm_free_) + s_.bucket_allreduce_ns[at(b)];
    queue_.push(comm_free_, payload(Kind::allreduce_done, b));
  }

  void allreduce_done(core::TimeNs now) {
    if (++buckets_done_ < buckets_) return;
    buckets_done_ = 0;
    for (std::int64_t w = 0; w < workers_; ++w) {
      allreduce_pending_[at(w)] = 0;
      maybe_finish(w, now);
    }
  }

  core::TimeNs apply_ns(std::int64_t srv) const {
    return core::seconds_to_ns(s_.push_bytes[at(srv)] / s_.apply_bytes_per_s);
  }

  void push_arrive(std::int64_t w, std::int64_t srv, core::TimeNs now) {
    core::TimeNs& cpu = server_cpu_free_[at(srv)];
    cpu = std::max(now, cpu) + apply_ns(srv);
    if (s_.sync != config::SyncMode::sync) {
      queue_.push(cpu, payload(Kind::apply_done, w * servers_ + srv));
      return;
    }
    if (++arrivals_[at(srv)] < clients_) return;
    arrivals_[at(srv)] = 0;
    cpu += apply_ns(srv);  // the update with the summed gradient
    queue_.push(cpu, payload(Kind::server_updated, srv));
  }

  void send_pull(std::int64_t w, std::int64_t srv, core::TimeNs now) {
    read_version_[at(w * servers_ + srv)] = version_[at(srv)];
    const core::TimeNs arrive =
        transfer(s_.server_node[at(srv)], node_of_client(w), s_.pull_bytes[at(srv)], now, srv, w, false);
    queue_.push(arrive, payload(Kind::pull_arrive, w * servers_ + srv));
  }

  void record_staleness(std::int64_t w, std::int64_t srv) {
    const auto s = at(version_[at(srv)] - read_version_[at(w * servers_ + srv)]);
    if (s >= result_.staleness.size()) result_.staleness.resize(s + 1, 0);
    ++result_.staleness[s];
  }

  void apply_done(std::int64_t w, std::int64_t srv, core::TimeNs now) {
    record_staleness(w, srv);
    ++version_[at(srv)];
    send_pull(w, srv, now);
  }

  void server_updated(std::int64_t srv, core::TimeNs now) {
    for (std::int64_t c = 0; c < clients_; ++c) record_staleness(c, srv);
    ++version_[at(srv)];
    for (std::int64_t c = 0; c < clients_; ++c) send_pull(c, srv, now);
  }

  void pull_arrive(std::int64_t c, core::TimeNs now) {
    if (--pending_pulls_[at(c)] != 0) return;
    if (s_.local_broadcast_ns > 0) {
      queue_.push(now + s_.local_broadcast_ns, payload(Kind::local_broadcast, c));
    } else {
      client_done(c, now);
    }
  }

  void maybe_finish(std::int64_t w, core::TimeNs now) {
    if (computing_[at(w)] != 0 || waiting_client_[at(w)] != 0 || allreduce_pending_[at(w)] != 0) return;
    computing_[at(w)] = 1;  // guards against a second finish while the optimizer runs
    if (s_.optimizer_ns > 0) {
      result_.workers[at(w)].compute_s += core::ns_to_seconds(s_.optimizer_ns);
      queue_.push(now + s_.optimizer_ns, payload(Kind::optimizer_done, w));
    } else {
      step_complete(w, now);
    }
  }

  bool may_start(std::int64_t w) const {
    return s_.sync != config::SyncMode::bounded || clock_[at(w)] - min_clock_ <= s_.staleness_bound;
  }

  void step_complete(std::int64_t w, core::TimeNs now) {
    computing_[at(w)] = 0;
    const std::int64_t c = ++clock_[at(w)];
    ++result_.workers[at(w)].steps;
    completions_.push_back(now);
    if (c == 1) first_done_[at(w)] = now;
    if (c == s_.steps) finished_[at(w)] = now;
    // The slowest clock advances when the last worker at it completes a step (O(W) per advance).
    const std::int64_t old_min = min_clock_;
    if (c - 1 == min_clock_ && --at_min_ == 0) {
      min_clock_ = *std::min_element(clock_.begin(), clock_.end());
      at_min_ = std::count(clock_.begin(), clock_.end(), min_clock_);
    }
    if (c < s_.steps) {
      if (may_start(w)) {
        start_step(w, now);
      } else {
        blocked_[at(w)] = 1;
      }
    }
    if (min_clock_ == old_min) return;
    for (std::int64_t v = 0; v < workers_; ++v) {
      if (blocked_[at(v)] != 0 && may_start(v)) {
        blocked_[at(v)] = 0;
        start_step(v, now);
      }
    }
  }

  void measure() {
    const core::TimeNs start = *std::max_element(first_done_.begin(), first_done_.end());
    const core::TimeNs end = *std::min_element(finished_.begin(), finished_.end());
    std::int64_t count = 0;
    core::TimeNs from = start;
    core::TimeNs to = end;
    if (end <= start) {
      from = 0;
      to = result_.makespan;
    }
    for (const core::TimeNs t : completions_) count += (t > from && t <= to) ? 1 : 0;
    result_.window_s = core::ns_to_seconds(to - from);
    result_.worker_steps_per_s = result_.window_s > 0.0 ? static_cast<double>(count) / result_.window_s : 0.0;
    for (std::int64_t w = 0; w < workers_; ++w) {
      DpWorkerStats& stats = result_.workers[at(w)];
      stats.wait_s = std::max(0.0, core::ns_to_seconds(finished_[at(w)]) - stats.compute_s);
    }
  }

  const DpTrainingSetup& s_;
  std::int64_t workers_;
  std::int64_t servers_;
  std::int64_t buckets_;
  EventQueue queue_;
  std::vector<core::TimeNs> egress_free_, ingress_free_, server_cpu_free_, server_io_free_, client_io_free_;
  std::vector<std::int64_t> version_, arrivals_, read_version_, bucket_count_;
  std::vector<std::int64_t> clock_, pending_pulls_;
  std::vector<std::uint8_t> allreduce_pending_, computing_, blocked_, waiting_client_;
  std::int64_t clients_ = 0;
  std::vector<std::int64_t> client_ready_;
  std::vector<core::TimeNs> step_start_, first_done_, finished_, completions_;
  // The input pipeline: per worker, when its loader finished its last batch, and when each of the last
  // input_prefetch_batches batches went to training (a ring by step).
  std::vector<core::TimeNs> load_end_;
  std::vector<std::vector<core::TimeNs>> consumed_;
  core::TimeNs comm_free_ = 0;
  std::int64_t buckets_done_ = 0;
  std::int64_t min_clock_ = 0;
  std::int64_t at_min_ = 0;  // workers whose clock is min_clock_
  DpTrainingResult result_;
};

}  // namespace

double compute_factor(const DpTrainingSetup& setup, std::int64_t worker, std::int64_t step) {
  double factor = 1.0;
  const double cv = setup.variability_cv;
  switch (setup.variability) {
    case config::Variability::none:
      break;
    case config::Variability::normal:
      factor = std::max(0.05, 1.0 + cv * core::standard_normal(setup.seed, worker, step));
      break;
    case config::Variability::lognormal:
      factor = core::lognormal_factor(setup.seed, worker, step, cv);
      break;
  }
  if (worker >= setup.workers - setup.stragglers) factor *= setup.straggler_slowdown;
  return factor;
}

std::uint64_t DpTrainingResult::applied() const {
  std::uint64_t n = 0;
  for (const auto c : staleness) n += c;
  return n;
}

std::int64_t DpTrainingResult::max_staleness() const {
  for (std::size_t s = staleness.size(); s-- > 0;) {
    if (staleness[s] != 0) return static_cast<std::int64_t>(s);
  }
  return 0;
}

DpTrainingResult simulate_dp_training(const DpTrainingSetup& setup) { return Simulation(setup).run(); }

}  // namespace dtsim::engine
