// Reading profile files (profile_loader.cpp, software_stack_loader.cpp): resolving an id to its file in
// a folder, the header every profile and preset starts with, and the provenance rule (README of
// hardware_profiles). Internal to the config loaders.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "config/json_reader.hpp"
#include "config/profile_loader.hpp"

namespace dtsim::config::detail {

// Path of `<folder>/<id>.json`, after checking that id is one of the files there (`what` names them in
// the error, which points at `where`).
std::string resolve(const std::string& folder, const std::string& id, const char* what,
                    const IdLocation& where);

// A profile file of `kind` (its folder under hardware_profiles), read after resolve().
struct ProfileFile {
  std::string path;
  nlohmann::json doc;
};
ProfileFile open_profile(const std::string& hardware_profiles, const char* kind, const std::string& id,
                         const char* what, const IdLocation& where);

// schema_version (1), id (equal to `id`, the file name) and name, common to profiles and presets;
// returns the name.
std::string read_header(ObjectReader& r, const std::string& id);

// The provenance rule: every top-level key other than schema_version, id, name and sources has a
// source, and sources name no other key.
void check_sources(ObjectReader& r);

}  // namespace dtsim::config::detail
