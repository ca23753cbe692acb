// The input pipeline in a rank's task graph (models/input/input_pipeline.hpp has the rate and its
// sources): one LoadOp task on an input stream of the rank, the time the readers take to supply one
// global batch.
//   prefetching workers  the load is the next batch's and runs beside the iteration; a zero-time task
//                        at the end of the rank's compute stream waits for it (the next iteration cannot
//                        start before its batch is there), so the iteration ends when both have
//   no workers           the load is this batch's, by the training process before it issues its first
//                        kernel: the rank's first compute task depends on it and its host waits
// Either waiting task is marked (TaskGraph::add_input_wait): the engine counts the time its stream waits
// there, with nothing else running on the rank, as the data stall.
#pragma once

#include <optional>

#include "config/scenario.hpp"
#include "graph/task_graph.hpp"

namespace dtsim::parallel {

struct InputLoad {
  graph::OpId load_op = 0;
  graph::OpId ready_op = 0;  // the zero-time task that waits for a prefetched batch
  graph::LabelId load_label = 0;
  graph::LabelId ready_label = 0;
  bool synchronous = false;  // the first compute task waits for the load
};

// The ops of `scenario`'s loads in `graph`, or std::nullopt without an input pipeline or when nothing
// in it limits the rate (no task is added then).
std::optional<InputLoad> add_input_load_ops(const config::Scenario& scenario, graph::TaskGraph& graph);

// Adds rank r's input stream and its load, and makes its compute wait for it as above. Call once the
// rank's compute stream holds all its tasks: `first_compute` is the first, `compute_stream` gets the
// waiting task last. The input stream comes after the rank's other streams.
void add_input_load(const InputLoad& load, graph::TaskGraph& graph, graph::RankId r, graph::TaskId first_compute,
                    graph::StreamId compute_stream);

}  // namespace dtsim::parallel
