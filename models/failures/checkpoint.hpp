// Checkpoint costs and the interval between checkpoints.
//
// A checkpoint saves the model state once (not once per data-parallel replica): the parameters in the
// training precision and the optimizer states (parallel/memory_model.hpp's bytes per parameter), written
// by the ranks together at the storage's aggregate bandwidth and read back at its read bandwidth by a
// restart:
//   write_s = state / write bandwidth,  read_s = state / read bandwidth.
// A checkpoint to a peer's host memory: each node sends its GPUs' weights and optimizer states over its
// NICs, all nodes at once, and a replacement node reads its share back the same way:
//   write_s = read_s = node state / node NIC bandwidth.
// A synchronous checkpoint stops training for write_s; an asynchronous one for the time each GPU takes to
// copy its own weights and optimizer states to host memory (snapshot_s = per-GPU state / the GPU-to-host
// bandwidth), and the checkpoint counts once written, write_s later.
//
// The interval (training time between checkpoints) that minimizes the expected wall time, for a stall
// delta per checkpoint and a job mean time between failures M (Daly 2006, "A higher order estimate of the
// optimum checkpoint interval for restart dumps", Future Generation Computer Systems 22:303-312, eq. 37):
//   tau = sqrt(2 delta M) [1 + (1/3) sqrt(delta / (2M)) + (1/9) delta / (2M)] - delta   for delta < 2M
//   tau = M                                                                            otherwise,
// which refines Young's first-order sqrt(2 delta M) (Young 1974, "A first order approximation to the
// optimum checkpoint interval", CACM 17(9):530-531).
//
// The expected effective training time ratio of a job with failure rate lambda (failures per second),
// restart overhead u0, stall w and interval dt, in closed form (Kokolis et al. 2025, "Revisiting
// Reliability in Large-Scale Machine Learning Research Clusters", HPCA, arXiv 2410.21680, with
// lambda = N_nodes r_f):
//   E[ETTR] = (1 - lambda (u0 + dt / 2)) / (1 + w / dt),
// reported beside the whole-run simulation (models/failures/goodput.hpp) as a check.
#pragma once

namespace dtsim::models {

struct CheckpointCost {
  double state_bytes = 0.0;  // the model state saved once
  double write_s = 0.0;
  double read_s = 0.0;
  double snapshot_s = 0.0;  // asynchronous: the GPU-to-host copy training waits for; 0 when synchronous
  double stall_s = 0.0;     // training time lost per checkpoint: write_s, or snapshot_s when asynchronous
};

struct CheckpointInput {
  double state_bytes = 0.0;
  double per_gpu_state_bytes = 0.0;  // the largest rank's weights and optimizer states
  bool peer_memory = false;          // to a peer's host memory instead of storage
  double node_state_bytes = 0.0;     // peer memory: what one node sends (its GPUs' states)
  double node_link_gbytes_per_s = 0.0;  // peer memory: the node's NIC bandwidth
  double write_gbytes_per_s = 0.0;
  double read_gbytes_per_s = 0.0;
  bool asynchronous = false;
  double snapshot_gbytes_per_s = 0.0;  // GPU to host memory, asynchronous only
};

CheckpointCost checkpoint_cost(const CheckpointInput& in);

// Daly's higher-order optimum (above); Young's first order.
double daly_optimal_interval_s(double stall_s, double mtbf_s);
double young_optimal_interval_s(double stall_s, double mtbf_s);

// Kokolis et al.'s E[ETTR] (above), clamped at 0.
double expected_ettr(double failures_per_s, double restart_s, double stall_s, double interval_s);

}  // namespace dtsim::models
