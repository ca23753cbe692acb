// One tensor-parallel rank's share of a micro-batch's tokens, as the programs built beside a layer's
// (latent attention's projections: mla.hpp; a multi-token prediction module's projection: mtp.hpp)
// see it; transformer.cpp fills it from the layer's dimensions.
#pragma once

#include "models/transformer/elementwise.hpp"

namespace dtsim::models {

struct TokenShard {
  double tokens = 0.0;              // inside the tensor-parallel region: b x s / context
  double tokens_elementwise = 0.0;  // outside it: tokens / t with sequence parallelism
  double h = 0.0;
  double a = 2.0;  // bytes per activation element
  double t = 1.0;  // tensor-parallel degree
  bool sp = false;
  bool backward_overlap = true;  // column-parallel backward collectives beside the GEMMs
  elementwise::Kernels kernels;
};

}  // namespace dtsim::models
