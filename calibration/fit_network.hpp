// Fitting a link's achievable efficiency and hop latency to measured nccl-tests all-reduce times.
//
// A fabric (logs that span nodes) is fitted through the network model itself (collective_cost.hpp:
// NCCL's algorithms and protocols, base latency, pipeline fill), two physical parameters, each on the
// rows that measure it:
//   latency_us   the hop latency across nodes (Simple protocol; the model derives LL's and LL128's
//                from it), on the latency-bound rows, 1 B to 64 KiB, where NCCL runs LL
//   efficiency   the NICs' achievable fraction of the line rate, on the rows of at least `min_bytes`
// each minimizing the squared relative error of the predicted time, the other held, three rounds.
// A row's time is the faster of its out-of-place and in-place runs (single-row spikes of one of them
// are common in published logs). Without latency-bound rows the profile's latency is kept.
// One node (an intra-node link): times of the ring are affine in the size, t = alpha + beta S; a
// weighted least-squares fit minimizing the relative error over the rows of at least `min_bytes` gives
// beta = 2(n-1)/n / intra_bw and alpha = NCCL's base latency + 2(n-1) intra_lat.
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
  std::string algorithm;  // the all-reduce algorithm at the largest fitted size
  double efficiency = 0.0;
  double latency_us = 0.0;
  AffineFit fit;             // the bandwidth rows: how many, and the fit's error on them (percent)
  int latency_rows = 0;      // fabric: the latency-bound rows the latency was fitted on (0: kept)
  double latency_mape = 0.0;  // and the fit's error on them (percent)
  double smallest_bytes = 0.0;  // the sizes of the logs' rows (above 0)
  double largest_bytes = 0.0;
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
