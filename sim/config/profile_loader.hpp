// Loading hardware profiles and model presets by id.
//
// Profiles live in <hardware_profiles>/{gpus,nodes,fabrics}/<id>.json (schema, units and the
// provenance rule: hardware_profiles/README.md); presets in <model_presets>/<id>.json:
//   {"schema_version": 1, "id": "...", "name": "...", "source": "citation", "model": {<model object>}}
// where the model object has the keys of a scenario's inline "model" (see read_transformer()).
//
// Ids are looked up among the files present, never by building a path from the id. An unknown id is
// an InputError at the place the id was written (`where`), listing the ids found, sorted:
//   /cluster/node: got "dgx-z100"; expected one of the node profiles: aws-p3dn, dgx-a100, ...
// Errors inside a profile or preset name that file and the JSON pointer within it. Each file must
// have schema_version 1, an `id` equal to its file name, a non-empty `name`; a profile must give a
// `sources` entry for each of its other top-level keys, and no source for a key it lacks.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "config/hardware.hpp"
#include "config/json_reader.hpp"
#include "config/scenario.hpp"

namespace dtsim::config {

// Where an id was written: file and JSON pointer of the string holding it.
struct IdLocation {
  std::string file;
  std::string pointer;
};

// Ids of the `<id>.json` files in `folder`, sorted; empty when the folder does not exist.
std::vector<std::string> list_ids(const std::string& folder);

// `hardware_profiles` is the folder holding gpus/, nodes/ and fabrics/.
GpuProfile load_gpu_profile(const std::string& hardware_profiles, const std::string& id,
                            const IdLocation& where);
NodeProfile load_node_profile(const std::string& hardware_profiles, const std::string& id,
                              const IdLocation& where);
FabricProfile load_fabric_profile(const std::string& hardware_profiles, const std::string& id,
                                  const IdLocation& where);

// A software stack (<hardware_profiles>/software/<id>.json, scenario.hpp): "settings" holds the
// scenario keys it gives defaults to, under their sections: model.attention, model.elementwise_kernels,
// parallelism.pipeline_comm, parallelism.tp_backward_overlap, parallelism.tp_comm_overlap,
// parallelism.zero3, training.overlap_grad_reduce, training.overlap_param_gather,
// training.host_issue_us_per_kernel, training.host_issue_us_per_tensor_op, training.host_checkpoint_us,
// training.host_sync_before_optimizer, training.grad_accumulation, training.autocast, training.fp8_recipe;
// each with a source.
// A stack whose backward collectives block (tp_backward_overlap false) must say tp_comm_overlap false.
SoftwareStack load_software_stack(const std::string& hardware_profiles, const std::string& id,
                                  const IdLocation& where);

// A parameter-server transport (<hardware_profiles>/ps_transports/<id>.json): optional
// channel_gbytes_per_s and server_gbytes_per_s (config/data_parallel.hpp); neither: "native".
PsTransport load_ps_transport(const std::string& hardware_profiles, const std::string& id,
                              const IdLocation& where);

// A model preset, fully validated; `preset` of the result is set to the id.
TransformerSpec load_model_preset(const std::string& model_presets, const std::string& id,
                                  const IdLocation& where);

// Reads the keys of a model object into a TransformerSpec:
//   kind ("transformer"), layers, hidden_size, heads, vocab_size, seq_length (positive integers),
//   kv_heads (default heads; must divide heads), ffn_hidden_size (default 4 * hidden_size),
//   mlp ("gelu" | "swiglu", default "gelu"), attention ("standard" | "flash", default "flash"),
//   tied_embeddings (default false).
// Without `base` (an inline model or a preset file) kind and the five sizes are required. With
// `base` (overrides of a preset) every key is optional and a key not given keeps base's value.
// Keys the caller has already read from `model` (e.g. "preset") are allowed; any other key is an
// error (the reader is finished on return).
TransformerSpec read_transformer(ObjectReader& model, const std::optional<TransformerSpec>& base);

}  // namespace dtsim::config
