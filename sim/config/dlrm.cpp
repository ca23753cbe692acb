#include "config/dlrm.hpp"

namespace dtsim::config {

double DlrmSpec::embedding_rows() const {
  double sum = 0.0;
  for (const EmbeddingTable& t : tables) sum += static_cast<double>(t.rows);
  return sum;
}

double DlrmSpec::lookups_per_sample() const {
  double sum = 0.0;
  for (const EmbeddingTable& t : tables) sum += t.pooling;
  return sum;
}

EmbeddingSharding EmbeddingPlan::sharding_of(const std::string& table) const {
  for (const auto& [name, s] : per_table) {
    if (name == table) return s;
  }
  return sharding;
}

EmbeddingPlacement EmbeddingPlan::placement_of(const std::string& table) const {
  for (const auto& [name, p] : per_table_placement) {
    if (name == table) return p;
  }
  return placement;
}

bool EmbeddingPlan::any_rows(const DlrmSpec& model, EmbeddingPlacement where) const {
  for (const EmbeddingTable& t : model.tables) {
    if (rows_of(t.name) == where) return true;
  }
  return false;
}

const char* to_string(Interaction i) {
  switch (i) {
    case Interaction::dot:
      return "dot";
    case Interaction::dcn_v2:
      return "dcn_v2";
  }
  return "unknown";
}

const char* to_string(EmbeddingSharding s) {
  switch (s) {
    case EmbeddingSharding::table_wise:
      return "table_wise";
    case EmbeddingSharding::row_wise:
      return "row_wise";
    case EmbeddingSharding::column_wise:
      return "column_wise";
    case EmbeddingSharding::table_row_wise:
      return "table_row_wise";
    case EmbeddingSharding::data_parallel:
      return "data_parallel";
  }
  return "unknown";
}

const char* to_string(EmbeddingPlacement p) {
  switch (p) {
    case EmbeddingPlacement::hbm:
      return "hbm";
    case EmbeddingPlacement::host:
      return "host";
    case EmbeddingPlacement::host_cached:
      return "host_cached";
    case EmbeddingPlacement::remote:
      return "remote";
  }
  return "unknown";
}

}  // namespace dtsim::config
