#include "network/nccl_protocol.hpp"

#include <algorithm>
#include <limits>

#include "core/errors.hpp"

namespace dtsim::network {

double nccl_hop_latency_us(HopClass hw, AlgorithmFamily family, Protocol protocol) {
  // hwLat[hw][algorithm][protocol], NCCL 2.30.7 src/graph/tuning.cc (reference Sec. 1.3).
  static constexpr double kTable[3][2][3] = {
      {{0.6, 1.25, 4.0}, {0.6, 1.9, 3.4}},   // NVLINK: Tree, Ring
      {{1.0, 1.9, 4.0}, {1.0, 2.5, 5.7}},    // PCI
      {{5.0, 8.5, 14.0}, {2.7, 4.0, 14.0}},  // NET
  };
  return kTable[static_cast<int>(hw)][static_cast<int>(family)][static_cast<int>(protocol)];
}

double nccl_base_latency_us(AlgorithmFamily family, Protocol protocol) {
  // baseLat[algorithm][protocol], NCCL 2.30.7 src/graph/tuning.cc (reference Sec. 1.3).
  static constexpr double kTable[2][3] = {
      {6.8, 14.0, 8.4},  // Tree
      {6.6, 14.0, 8.4},  // Ring
  };
  return kTable[static_cast<int>(family)][static_cast<int>(protocol)];
}

double nccl_ll_max_bytes_per_s(std::int64_t nodes) {
  // llMaxBws row 0 (Intel hosts across nodes), columns N2 and N>=3, NCCL 2.30.7 src/graph/tuning.cc.
  if (nodes <= 1) return std::numeric_limits<double>::infinity();
  return (nodes == 2 ? 39.0 : 20.4) * 1e9;
}

double protocol_bandwidth_fraction(AlgorithmFamily family, Protocol protocol) {
  switch (protocol) {
    case Protocol::simple:
      return 1.0;
    case Protocol::ll:
      // Ring: min(llMaxBw, 0.5 busBw); Tree: busBw / 3.8 against Simple's 0.92 busBw.
      return family == AlgorithmFamily::ring ? 0.5 : (1.0 / 3.8) / 0.92;
    case Protocol::ll128:
      // Ring: 0.92 busBw; Tree: the same (see the header).
      return 0.92;
  }
  throw core::InternalError("protocol_bandwidth_fraction: invalid Protocol value");
}

double protocol_hop_latency_s(double simple_latency_s, HopClass hw, AlgorithmFamily family,
                              Protocol protocol) {
  const double own_s = std::min(simple_latency_s, nccl_hop_latency_us(hw, family, protocol) * 1e-6);
  const double saved_s =
      (nccl_hop_latency_us(hw, family, Protocol::simple) - nccl_hop_latency_us(hw, family, protocol)) * 1e-6;
  if (protocol == Protocol::simple) return simple_latency_s;
  return std::max(own_s, simple_latency_s - saved_s);
}

const char* to_string(Protocol p) {
  switch (p) {
    case Protocol::ll:
      return "ll";
    case Protocol::ll128:
      return "ll128";
    case Protocol::simple:
      return "simple";
  }
  return "?";
}

}  // namespace dtsim::network
