#include "parallel/lower_data_parallel.hpp"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <unordered_map>
#include <utility>

#include <fmt/format.h>

#include "core/errors.hpp"
#include "parallel/feasibility.hpp"

namespace dtsim::parallel {

namespace data_parallel_lowering {

using graph::Category;
using graph::StreamId;
using graph::StreamKind;
using graph::StreamOrder;
using graph::TaskId;

class Builder {
 public:
  explicit Builder(const DataParallelJob& job) : j_(job) {
    const std::int64_t worker_nodes = (j_.workers + j_.gpus_per_node - 1) / j_.gpus_per_node;
    std::int64_t nodes = worker_nodes;
    for (const auto n : j_.server_node) nodes = std::max(nodes, n + 1);
    // Ranks: the workers, then each node's ports, each server, each client's receiving process, and
    // one for the delays (a concurrent stream counts in no books).
    const std::int64_t ranks = j_.workers + nodes + j_.servers() + j_.clients() + 1;
    out_.graph = graph::TaskGraph(static_cast<std::uint32_t>(ranks));
    out_.graph.set_task_limit(static_cast<std::size_t>(kMaxSimulated));
    graph::TaskGraph& g = out_.graph;
    std::uint32_t rank = 0;
    std::vector<std::string>& names = out_.rank_names;
    for (std::int64_t w = 0; w < j_.workers; ++w) names.push_back(fmt::format("worker {}", w));
    for (std::int64_t n = 0; n < nodes; ++n) names.push_back(fmt::format("node {} NIC ports (egress, ingress)", n));
    for (std::int64_t s = 0; s < j_.servers(); ++s) names.push_back(fmt::format("server {} (CPU, process)", s));
    for (std::int64_t c = 0; c < j_.clients(); ++c) names.push_back(fmt::format("client {} receiving process", c));
    names.push_back("latencies");
    for (std::int64_t w = 0; w < j_.workers; ++w, ++rank) {
      compute_.push_back(g.add_stream(rank, StreamKind::compute));
      if (j_.buckets() > 0) comm_.push_back(g.add_stream(rank, StreamKind::data_comm));
      if (j_.input_load_ns > 0) input_.push_back(g.add_stream(rank, StreamKind::input));
    }
    for (std::int64_t n = 0; n < nodes; ++n, ++rank) {
      egress_.push_back(g.add_stream(rank, StreamKind::data_comm, StreamOrder::arrival));
      ingress_.push_back(g.add_stream(rank, StreamKind::data_comm, StreamOrder::arrival));
    }
    for (std::int64_t s = 0; s < j_.servers(); ++s, ++rank) {
      server_cpu_.push_back(g.add_stream(rank, StreamKind::data_comm, StreamOrder::arrival));
      server_io_.push_back(g.add_stream(rank, StreamKind::data_comm, StreamOrder::arrival));
    }
    for (std::int64_t c = 0; c < j_.clients(); ++c, ++rank) {
      client_io_.push_back(g.add_stream(rank, StreamKind::data_comm, StreamOrder::arrival));
    }
    wire_ = g.add_stream(rank, StreamKind::data_comm, StreamOrder::concurrent);
  }

  DataParallelTasks build() {
    const auto n = static_cast<std::size_t>(j_.workers * j_.steps);
    out_.ready.resize(n);
    out_.begin.resize(n);
    out_.done.resize(n);
    chunk_ends_.resize(static_cast<std::size_t>(j_.workers));
    for (std::int64_t k = 0; k < j_.steps; ++k) step(k);
    return std::move(out_);
  }

 private:
  std::size_t at(std::int64_t w, std::int64_t k) const { return static_cast<std::size_t>(w * j_.steps + k); }
  static std::size_t at(std::int64_t i) { return static_cast<std::size_t>(i); }

  graph::OpId fixed(core::TimeNs ns) {
    const auto [it, added] = ops_.try_emplace(ns, 0);
    if (added) it->second = out_.graph.add_op(graph::FixedOp{ns});
    return it->second;
  }
  // Labels are few and named by string literals: one id per literal, found by its address.
  graph::LabelId label(const char* name) {
    for (const auto& [literal, id] : labels_) {
      if (literal == name) return id;
    }
    labels_.emplace_back(name, out_.graph.add_label(name));
    return labels_.back().second;
  }
  // A step is not a micro-batch: the tasks carry none (traces show the steps one after another).
  TaskId add(StreamId stream, core::TimeNs ns, Category category, const char* name,
             std::initializer_list<TaskId> deps = {}) {
    const TaskId t = out_.graph.add_task(graph::Task{fixed(ns), stream, category, label(name), -1});
    for (const TaskId d : deps) out_.graph.add_dependency(d, t);
    return t;
  }
  TaskId delay(core::TimeNs ns, const char* name, const std::vector<TaskId>& deps) {
    const TaskId t = add(wire_, ns, Category::data_comm, name);
    for (const TaskId d : deps) out_.graph.add_dependency(d, t);
    return t;
  }

  void step(std::int64_t k) {
    // Each worker up to the end of its backward pass.
    for (std::int64_t w = 0; w < j_.workers; ++w) {
      const TaskId ready = add(compute_[at(w)], 0, Category::forward, "ready");
      const std::int64_t bound_step = k - j_.staleness_bound - 1;
      if (j_.sync == config::SyncMode::bounded && bound_step >= 0) {
        out_.graph.add_dependency(joins_[at(bound_step)], ready);
      }
      out_.ready[at(w, k)] = ready;
      const TaskId begin = add(compute_[at(w)], 0, Category::forward, "begin");
      out_.begin[at(w, k)] = begin;
      if (j_.input_load_ns > 0) {
        const TaskId load = add(input_[at(w)], j_.input_load_ns, Category::input, "load");
        if (!j_.input_prefetch) {
          out_.graph.add_dependency(ready, load);
        } else if (k >= j_.input_prefetch_batches) {  // a buffer slot frees when its batch goes to training
          out_.graph.add_dependency(out_.begin[at(w, k - j_.input_prefetch_batches)], load);
        }
        out_.graph.add_dependency(load, begin);
        out_.graph.add_input_wait(begin);
      }
      const StepPasses passes = step_passes(j_, w, k);
      const core::TimeNs bwd = passes.backward_ns;
      add(compute_[at(w)], passes.forward_ns, Category::forward, "forward");
      std::vector<TaskId>& ends = chunk_ends_[at(w)];
      ends.clear();
      core::TimeNs done = 0;
      for (std::int64_t b = 0; b < j_.buckets(); ++b) {
        const double offset = static_cast<double>(bwd) * j_.bucket_ready_fraction[at(b)];
        const core::TimeNs end = std::clamp<core::TimeNs>(std::llround(offset), done, bwd);
        ends.push_back(add(compute_[at(w)], end - done, Category::backward, "backward"));
        done = end;
      }
      ends.push_back(add(compute_[at(w)], bwd - done, Category::backward, "backward"));
    }
    // The all-reduces, in bucket order, each after every worker's chunk.
    TaskId last_bucket = graph::TaskGraph::kNoTask;
    for (std::int64_t b = 0; b < j_.buckets(); ++b) {
      last_bucket = out_.graph.add_gang_task(
          graph::Task{fixed(j_.bucket_allreduce_ns[at(b)]), 0, Category::data_comm, label("all-reduce"), -1},
          comm_);
      for (std::int64_t w = 0; w < j_.workers; ++w) out_.graph.add_dependency(chunk_ends_[at(w)][at(b)], last_bucket);
    }
    // The parameter servers' exchanges: per client, when its pulls are all back.
    std::vector<TaskId> client_done(at(j_.clients()), graph::TaskGraph::kNoTask);
    if (j_.servers() > 0) exchanges(client_done);
    for (std::int64_t w = 0; w < j_.workers; ++w) {
      const TaskId done = add(compute_[at(w)], j_.optimizer_ns, Category::optimizer, "optimizer");
      if (last_bucket != graph::TaskGraph::kNoTask) out_.graph.add_dependency(last_bucket, done);
      const TaskId pulled = j_.servers() > 0 ? client_done[at(w / j_.client_size)] : graph::TaskGraph::kNoTask;
      if (pulled != graph::TaskGraph::kNoTask) out_.graph.add_dependency(pulled, done);
      out_.done[at(w, k)] = done;
    }
    if (j_.sync == config::SyncMode::bounded) {
      std::vector<TaskId> all(at(j_.workers));
      for (std::int64_t w = 0; w < j_.workers; ++w) all[at(w)] = out_.done[at(w, k)];
      joins_.push_back(delay(0, "slowest worker", all));
    }
  }

  void exchanges(std::vector<TaskId>& client_done) {
    const std::int64_t servers = j_.servers();
    std::vector<TaskId> issue(at(j_.clients()));
    for (std::int64_t c = 0; c < j_.clients(); ++c) {
      if (j_.client_size == 1) {
        issue[at(c)] = chunk_ends_[at(c)].back();
        continue;
      }
      std::vector<TaskId> backward_done;
      for (std::int64_t w = c * j_.client_size; w < (c + 1) * j_.client_size; ++w)
        backward_done.push_back(chunk_ends_[at(w)].back());
      issue[at(c)] = delay(j_.local_reduce_ns, "local reduce", backward_done);
    }
    std::vector<std::vector<TaskId>> pulled(at(j_.clients()));
    std::vector<std::vector<TaskId>> applied(at(servers));
    for (std::int64_t c = 0; c < j_.clients(); ++c) {
      for (std::int64_t i = 0; i < servers; ++i) {
        const std::int64_t srv = (c + i) % servers;
        const double bytes = j_.push_bytes[at(srv)];
        if (bytes <= 0.0) continue;
        const TaskId arrived = transfer(client_node(c), j_.server_node[at(srv)], bytes, srv, c, true, issue[at(c)]);
        const TaskId apply = add(server_cpu_[at(srv)], apply_ns(srv), Category::optimizer, "apply", {arrived});
        if (j_.sync == config::SyncMode::sync) {
          applied[at(srv)].push_back(apply);
          continue;
        }
        out_.updates.push_back({apply, srv, c});
        pulled[at(c)].push_back(
            transfer(j_.server_node[at(srv)], client_node(c), j_.pull_bytes[at(srv)], srv, c, false, apply));
      }
    }
    if (j_.sync == config::SyncMode::sync) {
      for (std::int64_t srv = 0; srv < servers; ++srv) {
        if (applied[at(srv)].empty()) continue;
        const TaskId update = add(server_cpu_[at(srv)], apply_ns(srv), Category::optimizer, "update");
        for (const TaskId a : applied[at(srv)]) out_.graph.add_dependency(a, update);
        out_.updates.push_back({update, srv, -1});
        for (std::int64_t c = 0; c < j_.clients(); ++c) {
          pulled[at(c)].push_back(
              transfer(j_.server_node[at(srv)], client_node(c), j_.pull_bytes[at(srv)], srv, c, false, update));
        }
      }
    }
    for (std::int64_t c = 0; c < j_.clients(); ++c) {
      std::vector<TaskId>& deps = pulled[at(c)];
      if (deps.empty()) deps.push_back(issue[at(c)]);  // it pushed to no server
      client_done[at(c)] = delay(j_.client_size > 1 ? j_.local_broadcast_ns : 0, "pulled", deps);
    }
  }

  std::int64_t client_node(std::int64_t c) const { return c * j_.client_size / j_.gpus_per_node; }
  core::TimeNs apply_ns(std::int64_t srv) const {
    return core::seconds_to_ns(j_.push_bytes[at(srv)] / j_.apply_bytes_per_s);
  }

  // A transfer of `bytes` from node a to node b between client c and server srv (`to_server`: a push)
  // once `issue` is done (lower_data_parallel.hpp); returns the task that ends when it has arrived.
  TaskId transfer(std::int64_t a, std::int64_t b, double bytes, std::int64_t srv, std::int64_t c, bool to_server,
                  TaskId issue) {
    std::vector<TaskId> parts;
    core::TimeNs latency = 0;
    if (a == b) {
      double rate = j_.intra_bytes_per_s;
      if (j_.channel_bytes_per_s > 0.0) rate = std::min(rate, j_.channel_bytes_per_s);
      parts.push_back(add(wire_, core::seconds_to_ns(bytes / rate), Category::data_comm, "intra-node", {issue}));
    } else {
      const core::TimeNs on_port = core::seconds_to_ns(bytes / j_.nic_bytes_per_s);
      const TaskId send = add(egress_[at(a)], on_port, Category::data_comm, to_server ? "push out" : "pull out",
                              {issue});
      out_.graph.add_cut_through(send);
      parts.push_back(add(ingress_[at(b)], on_port, Category::data_comm, to_server ? "push in" : "pull in",
                          {send}));
      double cap = j_.per_flow_bytes_per_s;
      if (j_.channel_bytes_per_s > 0.0) cap = cap > 0.0 ? std::min(cap, j_.channel_bytes_per_s) : j_.channel_bytes_per_s;
      if (cap > 0.0) parts.push_back(add(wire_, core::seconds_to_ns(bytes / cap), Category::data_comm, "flow cap", {send}));
      latency = j_.message_latency_ns;
    }
    const double receive_s =
        j_.square_bytes.empty() ? 0.0 : j_.receive_s_per_square_byte * j_.square_bytes[at(srv)];
    double server_s = j_.server_transport_bytes_per_s > 0.0 ? bytes / j_.server_transport_bytes_per_s : 0.0;
    if (to_server) server_s += receive_s;
    if (server_s > 0.0) {
      parts.push_back(add(server_io_[at(srv)], core::seconds_to_ns(server_s), Category::data_comm, "server process",
                          {issue}));
    }
    if (!to_server && receive_s > 0.0) {
      parts.push_back(add(client_io_[at(c)], core::seconds_to_ns(receive_s), Category::data_comm, "client process",
                          {issue}));
    }
    if (latency == 0 && parts.size() == 1) return parts.front();
    return delay(latency, "latency", parts);
  }

  const DataParallelJob& j_;
  DataParallelTasks out_;
  std::unordered_map<core::TimeNs, graph::OpId> ops_;
  std::vector<std::pair<const char*, graph::LabelId>> labels_;
  std::vector<StreamId> compute_, comm_, input_, egress_, ingress_, server_cpu_, server_io_, client_io_;
  StreamId wire_ = 0;
  std::vector<std::vector<TaskId>> chunk_ends_;  // per worker: its backward chunks of the step being built
  std::vector<TaskId> joins_;                    // bounded: per step, when every worker has done it
};

}  // namespace data_parallel_lowering

std::optional<std::string> data_parallel_too_large(std::int64_t workers, std::int64_t clients,
                                                   std::int64_t servers, std::int64_t buckets,
                                                   std::int64_t steps) {
  // Per step: each worker's markers, passes, load and optimizer (5 + buckets + 1); the buckets; each
  // client's issue and join; per client and server at most 12 (a push's and a pull's parts, the
  // apply); each server's update and one join.
  const double tasks = static_cast<double>(steps) *
                       (static_cast<double>(workers) * static_cast<double>(6 + buckets) + static_cast<double>(buckets) +
                        static_cast<double>(clients) * (2.0 + 12.0 * static_cast<double>(servers)) +
                        static_cast<double>(servers) + 1.0);
  if (tasks <= static_cast<double>(kMaxSimulated)) return std::nullopt;
  return fmt::format(
      "too large to simulate: {} workers, {} servers and {} all-reduce buckets over {} steps take about {:.3g} "
      "tasks, more than dtsim's limit of {}; use fewer training.simulated_steps, workers or servers",
      workers, servers, buckets, steps, tasks, kMaxSimulated);
}

DataParallelTasks lower_data_parallel(const DataParallelJob& job) {
  DTSIM_CHECK(job.workers >= 1 && job.steps >= 2, "a data-parallel job needs a worker and two steps");
  DTSIM_CHECK(job.client_size >= 1 && job.workers % job.client_size == 0, "clients must split the workers evenly");
  DTSIM_CHECK(!data_parallel_too_large(job.workers, job.clients(), job.servers(), job.buckets(), job.steps),
              "the data-parallel job is too large to lower");
  return data_parallel_lowering::Builder(job).build();
}

}  // namespace dtsim::parallel
