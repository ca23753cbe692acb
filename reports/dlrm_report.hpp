// Rendering of a DLRM's blocks (config/dlrm.hpp, results EmbeddingSummary): the model and its embedding
// plan as the scenario echo writes them (Scenario v1 keys, readable back), the result's "embeddings"
// block (JSON) and the terminal summary's model, plan and embeddings lines. Computes nothing.
#pragma once

#include <ostream>

#include <nlohmann/json.hpp>

#include "config/scenario.hpp"
#include "results/result.hpp"

namespace dtsim::reports {

nlohmann::ordered_json dlrm_model_json(const config::DlrmSpec& model);
// `model`: the tables the plan places (whether one is cached in HBM).
nlohmann::ordered_json embedding_plan_json(const config::EmbeddingPlan& plan, const config::DlrmSpec& model);
nlohmann::ordered_json embeddings_json(const results::EmbeddingSummary& e);

// The "model" lines of the setup, and its "parallelism", "embeddings" and "training" lines (the plan
// as the scenario states it).
void write_dlrm_setup_text(std::ostream& out, const config::Scenario& s);
void write_dlrm_plan_text(std::ostream& out, const config::Scenario& s);
// The placed tables: per-GPU lookups and imbalance, HBM and host memory, the cache's hit rate.
void write_embeddings_text(std::ostream& out, const results::EmbeddingSummary& e);

}  // namespace dtsim::reports
