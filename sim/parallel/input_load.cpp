#include "parallel/input_load.hpp"

#include "models/input/input_pipeline.hpp"

namespace dtsim::parallel {

std::optional<InputLoad> add_input_load_ops(const config::Scenario& scenario, graph::TaskGraph& graph) {
  if (!scenario.input) return std::nullopt;
  const models::InputRate rate = models::input_rate(scenario);
  if (rate.limited_by.empty()) return std::nullopt;
  InputLoad load;
  load.synchronous = !rate.prefetch;
  load.load_op = graph.add_op(graph::LoadOp{rate.load_s, static_cast<double>(scenario.training.global_batch_size)});
  load.load_label = graph.add_label(load.synchronous ? "load_batch" : "load_next_batch");
  if (!load.synchronous) {
    load.ready_op = graph.add_op(graph::LoadOp{0.0, 0.0});
    load.ready_label = graph.add_label("next_batch_ready");
  }
  return load;
}

void add_input_load(const InputLoad& load, graph::TaskGraph& graph, graph::RankId r, graph::TaskId first_compute,
                    graph::StreamId compute_stream) {
  graph::Task t;
  t.op = load.load_op;
  t.stream = graph.add_stream(r, graph::StreamKind::input);
  t.category = graph::Category::input;
  t.label = load.load_label;
  const graph::TaskId loaded = graph.add_task(t);
  graph::TaskId waiting = first_compute;
  if (load.synchronous) {
    graph.add_host_wait(first_compute);  // the training process loads before it issues the kernel
  } else {
    t.op = load.ready_op;
    t.stream = compute_stream;
    t.label = load.ready_label;
    waiting = graph.add_task(t);
  }
  graph.add_dependency(loaded, waiting);
  graph.add_input_wait(waiting);
}

}  // namespace dtsim::parallel
