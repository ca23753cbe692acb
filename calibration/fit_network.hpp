// Fitting a link's achievable efficiency and per-step latency to measured nccl-tests all-reduce times.
//
// Times of one algorithm are affine in the size: t = alpha + beta S (collective_cost.hpp). A weighted
// least-squares fit minimizing the relative error over the rows of at least `min_bytes` gives alpha and
// beta; the algorithm NCCL runs for the log's layout turns them into link parameters:
//   one node (n ranks)            ring: beta = 2(n-1)/n / intra_bw, alpha = 2(n-1) intra_lat
//   N nodes, 1 rank per node      ring: beta = 2(n-1)/n / node_nic_bw, alpha = 2(n-1) inter_lat
//   N nodes, r > 1 ranks per node tree (NCCL's), bound by the NICs: beta = 2(N-1)/N / node_nic_bw,
//                                 alpha = 2((r-1) intra_lat + log2(N) inter_lat)
// efficiency = fitted bandwidth / line rate (intra link, or NICs x line rate per node).
#pragma once

#include <string>
#include <vector>

#include "calibration/collective_log.hpp"
#include "calibration/nccl_log.hpp"
#include "config/hardware.hpp"
#include "config/scenario.hpp"

namespace dtsim::calibration {

struct AffineFit {
  double alpha_s = 0.0;
  double beta_s_per_byte = 0.0;
  double mape = 0.0;  // of the fitted line against the rows used, in percent
  int rows = 0;
};

// Fits t = alpha + beta S to (size, seconds) points with size >= min_bytes.
AffineFit fit_affine(const std::vector<std::pair<double, double>>& size_seconds, double min_bytes);

enum class FitTarget { intra_node, fabric };

struct LinkFit {
  FitTarget target = FitTarget::fabric;
  std::string algorithm;  // "ring" or "tree"
  double efficiency = 0.0;
  double latency_us = 0.0;
  AffineFit fit;
};

// `cluster` gives the node and NICs the log ran on (its cluster.nodes = nodes in the log) and
// ranks_per_node how many ranks of the job each node ran.
LinkFit fit_all_reduce(const std::vector<NcclLog>& logs, const config::Scenario& cluster, int ranks_per_node,
                       double min_bytes);

// A one-host calibration run's intra-node link, fitted to its own all-reduce sweep: the log at
// `all_reduce_log` (nccl-tests format) read back and fitted as above against a 1 GB/s reference on one
// node of `ranks`, so the fitted efficiency is the bandwidth in GB/s. Sets node.intra_gbytes_per_s to
// it, intra_efficiency to 1 (the fitted bandwidth is already achieved), intra_latency_us to the fitted
// latency (at least 1 ns), and intra_bandwidth_p10 / p90 to the median over sizes of the throughput at
// the 10th / 90th percentile of the repeats relative to the median (`timings`, the same sweep),
// clamped to <= 1 and >= 1. Returns the fit (for the profile's sources).
LinkFit fit_intra_node_link(config::NodeProfile& node, const std::string& all_reduce_log,
                            const std::vector<CollectiveTiming>& timings, int ranks, double min_bytes);

}  // namespace dtsim::calibration
