#include "config/profile_files.hpp"

#include <algorithm>
#include <array>
#include <filesystem>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "core/errors.hpp"

namespace dtsim::config::detail {

using nlohmann::json;

namespace {

constexpr std::int64_t kSchemaVersion = 1;

std::string join_ids(const std::vector<std::string>& ids) {
  std::string out;
  for (std::size_t i = 0; i < ids.size(); ++i) out += (i == 0 ? "" : ", ") + ids[i];
  return out;
}

}  // namespace

std::string resolve(const std::string& folder, const std::string& id, const char* what,
                    const IdLocation& where) {
  const std::vector<std::string> ids = list_ids(folder);
  if (std::find(ids.begin(), ids.end(), id) == ids.end()) {
    const std::string found = describe_value(json(id));
    if (ids.empty()) {
      throw core::InputError(
          where.file, where.pointer,
          fmt::format("got {}; expected one of the {}, but none were found in {}", found, what, folder));
    }
    throw core::InputError(where.file, where.pointer,
                           fmt::format("got {}; expected one of the {}: {}", found, what, join_ids(ids)));
  }
  return (std::filesystem::path(folder) / (id + ".json")).string();
}

ProfileFile open_profile(const std::string& hardware_profiles, const char* kind, const std::string& id,
                         const char* what, const IdLocation& where) {
  std::string path = resolve((std::filesystem::path(hardware_profiles) / kind).string(), id, what, where);
  json doc = read_json_file(path);
  return ProfileFile{std::move(path), std::move(doc)};
}

std::string read_header(ObjectReader& r, const std::string& id) {
  const std::int64_t version = r.required<std::int64_t>("schema_version", IntRule::any());
  if (version != kSchemaVersion) {
    throw r.error_at("schema_version", fmt::format("unsupported schema_version {}; this dtsim reads {}",
                                                   version, kSchemaVersion));
  }
  const std::string file_id = r.required<std::string>("id");
  if (file_id != id) throw r.mismatch("id", fmt::format("{} (the file name)", describe_value(json(id))));
  return r.required<std::string>("name");
}

void check_sources(ObjectReader& r) {
  static constexpr std::array<std::string_view, 4> kUnsourced = {"schema_version", "id", "name", "sources"};
  ObjectReader sources = r.child("sources");
  for (const auto& item : r.value().items()) {
    if (std::find(kUnsourced.begin(), kUnsourced.end(), item.key()) != kUnsourced.end()) continue;
    if (!sources.has(item.key())) {
      throw sources.error_at(item.key(),
                             fmt::format("missing source for '{}'; expected a non-empty string saying "
                                         "where the value comes from",
                                         item.key()));
    }
    sources.required<std::string>(item.key());
  }
  sources.finish();
}

}  // namespace dtsim::config::detail
