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

#include "calibration/nccl_log.hpp"
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

}  // namespace dtsim::calibration
