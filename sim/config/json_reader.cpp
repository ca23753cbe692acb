#include "config/json_reader.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace dtsim::config {

using nlohmann::json;

namespace {

// Longest unknown key shown in a message, in characters.
constexpr std::size_t kMaxKeyShown = 60;

// The key as a JSON string without its quotes: control characters escaped, the rest as is; cut.
std::string quoted_key(std::string_view key) { return string_excerpt(key, kMaxKeyShown); }

std::string join(const std::vector<std::string>& items, std::string_view separator) {
  std::string out;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += separator;
    out += items[i];
  }
  return out;
}

}  // namespace

// ---- describing values ---------------------------------------------------------------------------

std::string escape_pointer_token(std::string_view key) {
  std::string out;
  out.reserve(key.size());
  for (char c : key) {
    if (c == '~') {
      out += "~0";
    } else if (c == '/') {
      out += "~1";
    } else {
      out += c;
    }
  }
  return out;
}

std::string pointer_append(const std::string& pointer, std::string_view key) {
  return pointer + "/" + escape_pointer_token(key);
}

std::string pointer_append(const std::string& pointer, std::size_t index) {
  return fmt::format("{}/{}", pointer, index);
}

const char* json_type_name(const json& value) {
  if (value.is_null()) return "null";
  if (value.is_object()) return "object";
  if (value.is_array()) return "array";
  if (value.is_string()) return "string";
  if (value.is_boolean()) return "boolean";
  if (value.is_number_integer()) return "integer";
  if (value.is_number()) return "number";
  return "value";
}

// ---- rules ---------------------------------------------------------------------------------------

std::string IntRule::describe() const {
  constexpr std::int64_t lowest = std::numeric_limits<std::int64_t>::min();
  constexpr std::int64_t highest = std::numeric_limits<std::int64_t>::max();
  if (max == highest) {
    if (min == lowest) return "an integer";
    if (min == 1) return "a positive integer";
    if (min == 0) return "a non-negative integer";
    return fmt::format("an integer >= {}", min);
  }
  if (min == lowest) return fmt::format("an integer <= {}", max);
  if (min == max) return fmt::format("the integer {}", min);
  return fmt::format("an integer from {} to {}", min, max);
}

std::string NumberRule::describe() const {
  if (!min && !max) return "a number";
  if (min && !max) {
    if (*min == 0.0) return min_exclusive ? "a positive number" : "a non-negative number";
    return fmt::format("a number {} {}", min_exclusive ? ">" : ">=", *min);
  }
  if (!min) return fmt::format("a number {} {}", max_exclusive ? "<" : "<=", *max);
  return fmt::format("a number in {}{}, {}{}", min_exclusive ? "(" : "[", *min, *max,
                     max_exclusive ? ")" : "]");
}

std::string StringRule::describe() const { return allow_empty ? "a string" : "a non-empty string"; }

std::string BoolRule::describe() const { return "true or false"; }

// ---- ObjectReader --------------------------------------------------------------------------------

ObjectReader::ObjectReader(const json& value, std::string file, std::string pointer)
    : value_(&value), file_(std::move(file)), pointer_(std::move(pointer)) {
  if (!value.is_object()) {
    const std::string type = value.is_null() ? "" : fmt::format(" ({})", json_type_name(value));
    throw core::InputError(file_, pointer_,
                           fmt::format("got {}{}; expected an object", describe_value(value), type));
  }
}

bool ObjectReader::has(std::string_view key) const { return value_->contains(std::string(key)); }

void ObjectReader::expect_keys(std::span<const std::string_view> keys) {
  for (std::string_view key : keys) {
    if (std::find(known_.begin(), known_.end(), key) == known_.end()) known_.emplace_back(key);
  }
  for (const auto& item : value_->items()) {
    if (std::find(known_.begin(), known_.end(), item.key()) == known_.end()) finish();
  }
}

const json* ObjectReader::lookup(std::string_view key) {
  if (std::find(known_.begin(), known_.end(), key) == known_.end()) known_.emplace_back(key);
  const auto it = value_->find(std::string(key));
  if (it == value_->end()) return nullptr;
  read_.emplace(key);
  return &*it;
}

const json* ObjectReader::find(std::string_view key) { return lookup(key); }

core::InputError ObjectReader::error_at(std::string_view key, const std::string& message) const {
  return core::InputError(file_, pointer_append(pointer_, key), message);
}

core::InputError ObjectReader::error_here(const std::string& message) const {
  return core::InputError(file_, pointer_, message);
}

core::InputError ObjectReader::mismatch(std::string_view key, std::string_view expected,
                                        bool type_mismatch) const {
  const auto it = value_->find(std::string(key));
  if (it == value_->end()) return error_at(key, fmt::format("missing required key; expected {}", expected));
  const std::string type = type_mismatch && !it->is_null() ? fmt::format(" ({})", json_type_name(*it)) : "";
  return error_at(key, fmt::format("got {}{}; expected {}", describe_value(*it), type, expected));
}

template <>
std::int64_t ObjectReader::convert<std::int64_t>(std::string_view key, const json& v,
                                                 const IntRule& rule) const {
  std::int64_t result = 0;
  if (v.is_number_unsigned()) {
    const auto u = v.get<std::uint64_t>();
    if (u > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
      throw mismatch(key, rule.describe());
    result = static_cast<std::int64_t>(u);
  } else if (v.is_number_integer()) {
    result = v.get<std::int64_t>();
  } else if (v.is_number_float()) {
    // An integral value written as 4.0 or 1e3 is accepted; 2.5 is not.
    const double d = v.get<double>();
    if (!std::isfinite(d) || std::trunc(d) != d || d < -9.2e18 || d > 9.2e18)
      throw mismatch(key, rule.describe());
    result = static_cast<std::int64_t>(d);
  } else {
    throw mismatch(key, rule.describe(), true);
  }
  if (result < rule.min || result > rule.max) throw mismatch(key, rule.describe());
  return result;
}

template <>
int ObjectReader::convert<int>(std::string_view key, const json& v, const IntRule& rule) const {
  IntRule narrow = rule;
  narrow.min = std::max<std::int64_t>(rule.min, std::numeric_limits<int>::min());
  narrow.max = std::min<std::int64_t>(rule.max, std::numeric_limits<int>::max());
  return static_cast<int>(convert<std::int64_t>(key, v, narrow));
}

template <>
double ObjectReader::convert<double>(std::string_view key, const json& v, const NumberRule& rule) const {
  if (!v.is_number()) throw mismatch(key, rule.describe(), true);
  const double d = v.get<double>();
  if (!std::isfinite(d)) throw mismatch(key, rule.describe());
  if (rule.min && (rule.min_exclusive ? !(d > *rule.min) : !(d >= *rule.min)))
    throw mismatch(key, rule.describe());
  if (rule.max && (rule.max_exclusive ? !(d < *rule.max) : !(d <= *rule.max)))
    throw mismatch(key, rule.describe());
  return d;
}

template <>
std::string ObjectReader::convert<std::string>(std::string_view key, const json& v,
                                               const StringRule& rule) const {
  if (!v.is_string()) throw mismatch(key, rule.describe(), true);
  std::string s = v.get<std::string>();
  if (s.empty() && !rule.allow_empty) throw mismatch(key, rule.describe());
  return s;
}

template <>
bool ObjectReader::convert<bool>(std::string_view key, const json& v, const BoolRule& rule) const {
  if (!v.is_boolean()) throw mismatch(key, rule.describe(), true);
  return v.get<bool>();
}

template <typename T>
T ObjectReader::required(std::string_view key, const Rule<T>& rule) {
  const json* v = lookup(key);
  if (v == nullptr) throw mismatch(key, rule.describe());
  return convert<T>(key, *v, rule);
}

template <typename T>
T ObjectReader::optional(std::string_view key, T fallback, const Rule<T>& rule) {
  const json* v = lookup(key);
  if (v == nullptr) return fallback;
  return convert<T>(key, *v, rule);
}

template <typename T>
std::optional<T> ObjectReader::maybe(std::string_view key, const Rule<T>& rule) {
  const json* v = lookup(key);
  if (v == nullptr) return std::nullopt;
  return convert<T>(key, *v, rule);
}

#define DTSIM_INSTANTIATE_READS(T)                                           \
  template T ObjectReader::required<T>(std::string_view, const Rule<T>&);    \
  template T ObjectReader::optional<T>(std::string_view, T, const Rule<T>&); \
  template std::optional<T> ObjectReader::maybe<T>(std::string_view, const Rule<T>&);
DTSIM_INSTANTIATE_READS(std::int64_t)
DTSIM_INSTANTIATE_READS(int)
DTSIM_INSTANTIATE_READS(double)
DTSIM_INSTANTIATE_READS(bool)
DTSIM_INSTANTIATE_READS(std::string)
#undef DTSIM_INSTANTIATE_READS

std::optional<std::size_t> ObjectReader::choose(std::string_view key,
                                                const std::vector<std::string_view>& names, bool required) {
  std::vector<std::string> quoted;
  quoted.reserve(names.size());
  for (std::string_view name : names) quoted.push_back(json(std::string(name)).dump());
  const std::string expected = "one of " + join(quoted, ", ");

  const json* v = lookup(key);
  if (v == nullptr) {
    if (required) throw mismatch(key, expected);
    return std::nullopt;
  }
  if (!v->is_string()) throw mismatch(key, expected, true);
  const auto& s = v->get_ref<const std::string&>();
  const auto it = std::find(names.begin(), names.end(), s);
  if (it == names.end()) throw mismatch(key, expected);
  return static_cast<std::size_t>(it - names.begin());
}

ObjectReader ObjectReader::child(std::string_view key) {
  const json* v = lookup(key);
  if (v == nullptr) throw mismatch(key, "an object");
  return ObjectReader(*v, file_, pointer_append(pointer_, key));
}

std::optional<ObjectReader> ObjectReader::optional_child(std::string_view key) {
  const json* v = lookup(key);
  if (v == nullptr) return std::nullopt;
  return ObjectReader(*v, file_, pointer_append(pointer_, key));
}

void ObjectReader::finish() const {
  for (const auto& item : value_->items()) {
    if (read_.count(item.key()) > 0) continue;
    if (std::find(known_.begin(), known_.end(), item.key()) != known_.end()) continue;
    const std::string expected =
        known_.empty() ? "this object takes no keys" : "expected one of: " + join(known_, ", ");
    throw error_at(item.key(), fmt::format("unknown key '{}'; {}", quoted_key(item.key()), expected));
  }
}

}  // namespace dtsim::config
