// Time-to-converge: an outcome model on top of a simulated throughput.
//
// Steps to the target as a function of the batch B of one update (McCandlish et al. 2018, "An Empirical
// Model of Large-Batch Training", arXiv 1812.06162, Eq. 2.11; Kaplan et al. 2020 Eq. 5.1):
//
//   S(B) = S_min (1 + B_noise / B)
//
// with B_noise (the critical batch) and S_min from the model's layer table, each with its source.
// Stale gradients (asynchronous or bounded-staleness parameter servers) cost extra updates:
//
//   S(B, s) = S(B) * g(s),   g(s) = 1 + kappa * s
//
// where s is the mean staleness of the applied gradients (measured by the simulation, in updates) and
// kappa the scenario's training.staleness_penalty. The linear form and the default kappa = 0.1 follow
// the range of the reference notes (Dai et al. ICLR 2019 find deeper, momentum-trained networks more
// sensitive; SSP's regret bound of Ho et al. NIPS 2013 gives the pessimistic ceiling g(s) = s + 1):
// a documented modelling assumption, not a fit.
//
// One update of synchronous training uses the global batch; one update of asynchronous training is one
// worker's batch. Time to the target = updates needed / updates per second (from the simulation).
#pragma once

#include "config/layer_table.hpp"

namespace dtsim::models {

struct ConvergenceInput {
  config::ConvergencePreset preset;
  double update_batch = 0.0;       // samples per update
  double mean_staleness = 0.0;     // updates
  double staleness_penalty = 0.0;  // kappa
  double updates_per_s = 0.0;
};

struct ConvergenceEstimate {
  double b_noise = 0.0;
  double s_min = 0.0;
  double update_batch = 0.0;
  double steps_without_staleness = 0.0;  // S(B)
  double staleness_factor = 1.0;         // g(s)
  double updates_to_target = 0.0;        // S(B, s)
  double samples_to_target = 0.0;
  double time_to_target_s = 0.0;
};

// S(B) = S_min (1 + B_noise / B).
double steps_to_target(const config::ConvergencePreset& preset, double batch);

ConvergenceEstimate estimate_convergence(const ConvergenceInput& in);

}  // namespace dtsim::models
