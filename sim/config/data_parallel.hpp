// Data-parallel training of a layer-table workload (docs/data-parallel.md "Data-parallel classics"): architecture
// (all-reduce, parameter servers, hybrid), synchronization (sync, async, bounded staleness), per-worker
// compute-time variability and stragglers. Read from the scenario's "training" object by
// read_data_parallel (config/layer_table_loader.hpp); simulated on the engine (parallel/lower_data_parallel.hpp).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace dtsim::config {

enum class Architecture { allreduce, parameter_server, hybrid };
enum class SyncMode { sync, async, bounded };
enum class ServerPlacement { colocated, dedicated };
// Which server a variable (or part) goes to, in the order the model creates its variables:
//   round_robin     the next server in turn: tf.train.replica_device_setter's default strategy;
//   greedy_by_size  the server holding the fewest bytes so far (the first of equals):
//                   tf.contrib.training.GreedyLoadBalancingStrategy with byte_size_load_fn, as
//                   tf_cnn_benchmarks places variables in its distributed parameter-server mode
//                   (variable_mgr.py, VariableMgrDistributedFetchFromPS.get_devices).
enum class VariablePlacement { round_robin, greedy_by_size };
enum class Variability { none, normal, lognormal };

// The software that moves tensors between parameter-server clients and servers (profile
// hardware_profiles/ps_transports/<id>.json; README there). Every client-server pair is one channel (a
// gRPC channel is one HTTP/2 connection between two processes, whatever the number of tensors).
//   channel cap   a transfer on one channel goes no faster than channel_gbytes_per_s;
//   server cap    a server process sends and receives through one FIFO at server_gbytes_per_s (the
//                 transport's copies and serialization run on the server's threads);
//   large messages  receiving one message (tensor) of S bytes takes S^2 x receive_s_per_square_byte
//                 of the receiving process's time on top (gRPC's receive path handles a message's slices
//                 at a cost that grows with the slices still queued: grpc/grpc#8975). The profile gives
//                 one measured point (large_message: a message of S_ref bytes moved end to end at
//                 rate_ref) from which, with the server rate, the coefficient follows:
//                 c = (S_ref / rate_ref - S_ref / server rate) / S_ref^2 (the time the measured rate
//                 leaves beyond the server's linear time, attributed to the quadratic term).
// "native" has none of these: tensors move at the fabric's rates.
struct PsTransport {
  std::string id = "native";
  std::optional<double> channel_gbytes_per_s;
  std::optional<double> server_gbytes_per_s;
  double receive_s_per_square_byte = 0.0;
};

struct ParameterServerSpec {
  std::int64_t servers = 1;
  ServerPlacement placement = ServerPlacement::colocated;
  // Rate at which a server folds a gradient into its parameters (bytes of gradient per second).
  double apply_gbytes_per_s = 10.0;
  // Variables larger than this are split into parts of at most this size, each placed on its own
  // server (BytePS partitions tensors this way to balance servers); 0: whole variables (TensorFlow).
  double partition_bytes = 0.0;
  // A node's workers sum their gradients inside the node and push and pull once per node (BytePS,
  // TensorFlow with one worker process per machine); false: every GPU is its own client.
  bool local_aggregation = false;
  VariablePlacement variable_placement = VariablePlacement::round_robin;
  PsTransport transport;
};

struct DataParallelSpec {
  Architecture architecture = Architecture::allreduce;
  SyncMode sync = SyncMode::sync;
  std::int64_t staleness_bound = 0;  // bounded: a worker waits when this many steps ahead of the slowest
  ParameterServerSpec parameter_server;
  Variability variability = Variability::none;
  double variability_cv = 0.0;  // coefficient of variation of a worker's compute time per step
  std::int64_t stragglers = 0;  // workers slower by straggler_slowdown
  double straggler_slowdown = 1.0;
  std::int64_t steps = 20;                   // steps each worker simulates (the first is warm-up)
  double fusion_bytes = 64.0 * 1024 * 1024;  // all-reduce fusion buffer (Horovod's default 64 MiB)
  double staleness_penalty = 0.1;            // kappa of the convergence model's g(s) = 1 + kappa s
};

const char* to_string(Architecture a);
const char* to_string(SyncMode s);
const char* to_string(ServerPlacement p);
const char* to_string(VariablePlacement p);
const char* to_string(Variability v);

}  // namespace dtsim::config
