// Reading a scenario's "parallelism" object: the degrees of each parallel dimension, the pipeline
// schedule, ZeRO stage and ZeRO-3 implementation ("zero3"), the mesh order and the communication options.
// Every key is optional. Checked here: known keys and enum values, combinations that contradict each
// other (an interleaved schedule without virtual stages, a zero3 block without stage 3, ...), and that
// data x tensor x pipeline x context equals the scenario's GPU count (data is derived when absent).
// Each error is an InputError naming the file and the JSON pointer.
#pragma once

#include "config/json_reader.hpp"
#include "config/scenario.hpp"

namespace dtsim::config {

// `top` is the scenario's top-level object; `scenario` carries the model and cluster already read;
// `software` gives the defaults of its keys (scenario.hpp).
ParallelismSpec read_parallelism(ObjectReader& top, const Scenario& scenario, const SoftwareStack& software);

// A "zero3" block (every key optional) over `base`: a scenario's, or a software stack's.
Zero3Spec read_zero3(ObjectReader& r, const Zero3Spec& base);

}  // namespace dtsim::config
