// A JSON Schema (draft 2020-12) checker for the tests, of the keywords the schemas in schemas/ use:
// $ref (to another file of the folder, "name.schema.json", into one, "name.schema.json#/$defs/x", or
// into the current file, "#/$defs/x"), $defs, type (one or a
// list; "integer" is a number without a fraction), const, enum, properties, required,
// additionalProperties (false or a schema), items, minItems, maxItems, oneOf, anyOf, minimum, maximum and
// pattern. check() returns
// one message per violation, each with the JSON pointer of the value; an unknown keyword is reported,
// so a schema cannot silently use one the checker would ignore.
#pragma once

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace dtsim::test {

class SchemaChecker {
 public:
  explicit SchemaChecker(std::filesystem::path folder) : folder_(std::move(folder)) {}

  std::vector<std::string> check(const nlohmann::json& value, const std::string& schema_file) {
    std::vector<std::string> errors;
    current_ = schema_file;
    validate(value, document(schema_file), "", errors);
    return errors;
  }

  const nlohmann::json& document(const std::string& file) {
    auto it = documents_.find(file);
    if (it == documents_.end()) {
      std::ifstream in(folder_ / file);
      std::stringstream text;
      text << in.rdbuf();
      it = documents_.emplace(file, nlohmann::json::parse(text.str())).first;
    }
    return it->second;
  }

 private:
  static bool has_type(const nlohmann::json& v, const std::string& type) {
    if (type == "null") return v.is_null();
    if (type == "boolean") return v.is_boolean();
    if (type == "integer") return v.is_number_integer() || (v.is_number_float() && v.get<double>() == static_cast<double>(static_cast<long long>(v.get<double>())));
    if (type == "number") return v.is_number();
    if (type == "string") return v.is_string();
    if (type == "array") return v.is_array();
    if (type == "object") return v.is_object();
    return false;
  }

  // The file a reference names (the current one for "#/..."), and the schema it points at.
  std::pair<std::string, const nlohmann::json*> resolve(const std::string& ref) {
    const std::size_t hash = ref.find('#');
    const std::string file = hash == 0 ? current_ : ref.substr(0, hash);
    const nlohmann::json& doc = document(file);
    if (hash == std::string::npos) return {file, &doc};
    return {file, &doc.at(nlohmann::json::json_pointer(ref.substr(hash + 1)))};
  }

  void validate(const nlohmann::json& v, const nlohmann::json& s, const std::string& at,
                std::vector<std::string>& errors) {
    static const std::set<std::string> kKnown = {
        "$schema", "$id", "title", "description", "$ref", "type", "const", "enum", "properties", "required",
        "additionalProperties", "items", "minItems", "maxItems", "oneOf", "anyOf", "minimum", "maximum", "pattern", "$defs"};
    const std::string where = at.empty() ? "/" : at;
    for (const auto& [key, _] : s.items()) {
      if (!kKnown.contains(key)) errors.push_back(where + ": the schema uses \"" + key + "\", which this checker does not know");
    }
    if (s.contains("$ref")) {
      const auto [file, target] = resolve(s["$ref"].get<std::string>());
      const std::string outer = current_;
      current_ = file;  // references inside the target are relative to its file
      validate(v, *target, at, errors);
      current_ = outer;
    }
    if (s.contains("type")) {
      const nlohmann::json& t = s["type"];
      bool ok = false;
      if (t.is_string()) ok = has_type(v, t.get<std::string>());
      for (const auto& one : t.is_array() ? t : nlohmann::json::array()) ok = ok || has_type(v, one.get<std::string>());
      if (!ok) {
        errors.push_back(where + ": " + v.dump().substr(0, 80) + " is not of type " + t.dump());
        return;
      }
    }
    if (s.contains("const") && v != s["const"]) errors.push_back(where + ": expected " + s["const"].dump());
    if (s.contains("enum")) {
      bool found = false;
      for (const auto& e : s["enum"]) found = found || e == v;
      if (!found) errors.push_back(where + ": " + v.dump() + " is not one of " + s["enum"].dump());
    }
    if (s.contains("minimum") && v.is_number() && v.get<double>() < s["minimum"].get<double>())
      errors.push_back(where + ": below the minimum " + s["minimum"].dump());
    if (s.contains("maximum") && v.is_number() && v.get<double>() > s["maximum"].get<double>())
      errors.push_back(where + ": above the maximum " + s["maximum"].dump());
    if (s.contains("pattern") && v.is_string() &&
        !std::regex_search(v.get<std::string>(), std::regex(s["pattern"].get<std::string>())))
      errors.push_back(where + ": \"" + v.get<std::string>() + "\" does not match " + s["pattern"].dump());
    if (v.is_object()) {
      for (const auto& r : s.value("required", nlohmann::json::array())) {
        if (!v.contains(r.get<std::string>())) errors.push_back(where + ": missing required key \"" + r.get<std::string>() + "\"");
      }
      const nlohmann::json& props = s.contains("properties") ? s["properties"] : nlohmann::json::object();
      for (const auto& [key, value] : v.items()) {
        const std::string child = at + "/" + key;
        if (props.contains(key)) {
          validate(value, props[key], child, errors);
        } else if (s.contains("additionalProperties")) {
          const nlohmann::json& extra = s["additionalProperties"];
          if (extra.is_boolean() && !extra.get<bool>()) {
            errors.push_back(where + ": key \"" + key + "\" is not in the schema");
          } else if (extra.is_object()) {
            validate(value, extra, child, errors);
          }
        }
      }
    }
    if (v.is_array() && s.contains("minItems") && v.size() < s["minItems"].get<std::size_t>())
      errors.push_back(where + ": fewer than " + s["minItems"].dump() + " items");
    if (v.is_array() && s.contains("maxItems") && v.size() > s["maxItems"].get<std::size_t>())
      errors.push_back(where + ": more than " + s["maxItems"].dump() + " items");
    if (v.is_array() && s.contains("items")) {
      for (std::size_t i = 0; i < v.size(); ++i) validate(v[i], s["items"], at + "/" + std::to_string(i), errors);
    }
    for (const char* combinator : {"oneOf", "anyOf"}) {
      if (!s.contains(combinator)) continue;
      std::size_t matches = 0;
      for (const auto& branch : s[combinator]) {
        std::vector<std::string> branch_errors;
        validate(v, branch, at, branch_errors);
        if (branch_errors.empty()) ++matches;
      }
      const bool one = std::string(combinator) == "oneOf";
      if (one ? matches != 1 : matches == 0) {
        errors.push_back(where + ": matches " + std::to_string(matches) + " of the " + combinator + " branches");
      }
    }
  }

  std::filesystem::path folder_;
  std::map<std::string, nlohmann::json> documents_;
  std::string current_;  // the file of the schema being applied
};

}  // namespace dtsim::test
