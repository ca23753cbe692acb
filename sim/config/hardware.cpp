// Facts derived from hardware profiles (hardware.hpp).
#include "config/hardware.hpp"

#include <fmt/format.h>

#include "core/units.hpp"

namespace dtsim::config {

namespace {

std::string bytes_text(double bytes) {
  if (bytes >= core::kGiB) return fmt::format("{:g} GiB", bytes / core::kGiB);
  if (bytes >= 1024.0 * 1024.0) return fmt::format("{:g} MiB", bytes / (1024.0 * 1024.0));
  if (bytes >= 1024.0) return fmt::format("{:g} KiB", bytes / 1024.0);
  return fmt::format("{:g} B", bytes);
}

}  // namespace

std::string extrapolation_note(const FabricProfile& fabric, std::int64_t nodes, double min_bytes,
                               double max_bytes) {
  if (!fabric.fitted_on || nodes <= 1) return "";  // one node does not use the fabric
  const FittedRange& f = *fabric.fitted_on;
  std::string outside;
  if (nodes > f.max_nodes || nodes < f.min_nodes) outside = fmt::format("{} nodes", nodes);
  if (max_bytes > f.max_bytes || min_bytes < f.min_bytes) {
    outside += fmt::format("{}sizes {} to {}", outside.empty() ? "" : " and ", bytes_text(min_bytes),
                           bytes_text(max_bytes));
  }
  if (outside.empty()) return "";
  const std::string fitted_nodes = f.min_nodes == f.max_nodes ? fmt::format("{}", f.min_nodes)
                                                              : fmt::format("{}-{}", f.min_nodes, f.max_nodes);
  return fmt::format("extrapolated: fabric {} was fitted on {} nodes and {} to {}; {} leave that range",
                     fabric.id, fitted_nodes, bytes_text(f.min_bytes), bytes_text(f.max_bytes), outside);
}

std::string extrapolation_note(const FabricProfile& fabric, std::int64_t nodes) {
  if (!fabric.fitted_on) return "";
  return extrapolation_note(fabric, nodes, fabric.fitted_on->min_bytes, fabric.fitted_on->max_bytes);
}

}  // namespace dtsim::config
