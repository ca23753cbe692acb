// Strict reading of JSON input on top of nlohmann::json.
//
// Parsing (json_text.hpp): parse_json_text() and read_json_file() turn every failure into a
// core::InputError: malformed JSON with its line and column, duplicate keys, an empty input, a file
// that cannot be read, and input past the size, nesting and string limits.
//
// Reading: an ObjectReader walks one JSON object. Each key is read once with a type and a rule
// (required<T>, optional<T>, enum_value, child, ...); finish() then rejects every key that was never
// asked for. Every error is an InputError(file, pointer, message) where pointer is the RFC 6901 JSON
// pointer of the offending value and message says what was found and what was expected, e.g.
//   /parallelism/tensor: got -2; expected a positive integer
//   /model/layers: got "96" (string); expected a positive integer
//   /training/precision: got "bf32"; expected one of "bf16", "fp16", "fp32", "tf32", "fp8"
//   /training/bucket: unknown key 'bucket'; expected one of: global_batch_size, micro_batch_size
// Integers reject booleans and non-integral numbers (a number with an integral value such as 4.0 or
// 1e3 is accepted); numbers reject NaN and infinities.
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "config/json_excerpt.hpp"
#include "config/json_text.hpp"
#include "core/errors.hpp"

namespace dtsim::config {

// ---- describing values ---------------------------------------------------------------------------

// RFC 6901 reference token: '~' becomes "~0", '/' becomes "~1".
std::string escape_pointer_token(std::string_view key);

// `pointer` extended by one object key (escaped) or one array index.
std::string pointer_append(const std::string& pointer, std::string_view key);
std::string pointer_append(const std::string& pointer, std::size_t index);

// "string", "integer", "number", "boolean", "null", "object" or "array".
const char* json_type_name(const nlohmann::json& value);

// ---- rules a value must satisfy ------------------------------------------------------------------

// An integer within [min, max].
struct IntRule {
  std::int64_t min = std::numeric_limits<std::int64_t>::min();
  std::int64_t max = std::numeric_limits<std::int64_t>::max();

  static constexpr IntRule any() { return {}; }
  static constexpr IntRule positive() { return {1, std::numeric_limits<std::int64_t>::max()}; }
  static constexpr IntRule non_negative() { return {0, std::numeric_limits<std::int64_t>::max()}; }
  static constexpr IntRule at_least(std::int64_t lo) {
    return {lo, std::numeric_limits<std::int64_t>::max()};
  }
  static constexpr IntRule between(std::int64_t lo, std::int64_t hi) { return {lo, hi}; }

  // "a positive integer", "an integer from 0 to 3", "an integer >= 2", ...
  std::string describe() const;
};

// A finite number with an optional lower and upper bound, each inclusive or exclusive.
struct NumberRule {
  std::optional<double> min;
  bool min_exclusive = false;
  std::optional<double> max;
  bool max_exclusive = false;

  static NumberRule any() { return {}; }
  static NumberRule positive() { return {0.0, true, std::nullopt, false}; }
  static NumberRule non_negative() { return {0.0, false, std::nullopt, false}; }
  static NumberRule at_least(double lo) { return {lo, false, std::nullopt, false}; }
  static NumberRule between(double lo, double hi) { return {lo, false, hi, false}; }  // [lo, hi]
  // (0, 1]: efficiencies and other fractions.
  static NumberRule fraction() { return {0.0, true, 1.0, false}; }

  // "a positive number", "a number >= 1", "a number in (0, 1]", ...
  std::string describe() const;
};

struct StringRule {
  bool allow_empty = false;

  static StringRule non_empty() { return {false}; }
  static StringRule any() { return {true}; }

  std::string describe() const;  // "a non-empty string" or "a string"
};

struct BoolRule {
  std::string describe() const;  // "true or false"
};

template <typename T>
struct RuleFor;
template <>
struct RuleFor<std::int64_t> {
  using type = IntRule;
};
template <>
struct RuleFor<int> {
  using type = IntRule;
};
template <>
struct RuleFor<double> {
  using type = NumberRule;
};
template <>
struct RuleFor<std::string> {
  using type = StringRule;
};
template <>
struct RuleFor<bool> {
  using type = BoolRule;
};

// The rule that goes with a value type: IntRule for std::int64_t and int, NumberRule for double,
// StringRule for std::string, BoolRule for bool. Default-constructed rules accept any value of the
// type, except StringRule which rejects the empty string.
template <typename T>
using Rule = typename RuleFor<T>::type;

// One accepted spelling of an enumeration value.
template <typename E>
struct Choice {
  std::string_view name;
  E value;
};

// The choices for `values`, each spelled by its to_string() (found by argument-dependent lookup).
template <typename E, std::size_t N>
std::array<Choice<E>, N> named_choices(const std::array<E, N>& values) {
  std::array<Choice<E>, N> out{};
  for (std::size_t i = 0; i < N; ++i) out[i] = Choice<E>{to_string(values[i]), values[i]};
  return out;
}

// ---- ObjectReader --------------------------------------------------------------------------------

class ObjectReader {
 public:
  // `value` must be a JSON object (otherwise InputError "got ...; expected an object") and must
  // outlive the reader. `file` and `pointer` locate it for error messages.
  ObjectReader(const nlohmann::json& value, std::string file, std::string pointer);

  const std::string& file() const { return file_; }
  const std::string& pointer() const { return pointer_; }
  const nlohmann::json& value() const { return *value_; }

  // Whether `key` is present. Does not mark it as read.
  bool has(std::string_view key) const;

  // Declares every key this object may hold and rejects at once any other key present, so that a
  // misspelt key is reported before the required key it was meant to be.
  void expect_keys(std::initializer_list<std::string_view> keys) {
    expect_keys(std::span<const std::string_view>(keys.begin(), keys.size()));
  }
  void expect_keys(std::span<const std::string_view> keys);

  // Typed reads; T is std::int64_t, int, double, bool or std::string. Each marks the key as read.
  // required(): a missing key is an InputError ("missing required key; expected ...").
  template <typename T>
  T required(std::string_view key, const Rule<T>& rule = Rule<T>{});
  // optional(): a missing key gives `fallback` (not checked against the rule); null is not absence.
  template <typename T>
  T optional(std::string_view key, T fallback, const Rule<T>& rule = Rule<T>{});
  // maybe(): a missing key gives std::nullopt.
  template <typename T>
  std::optional<T> maybe(std::string_view key, const Rule<T>& rule = Rule<T>{});

  // An enumeration spelled as one of `choices` (the error lists them in the given order).
  template <typename E>
  E enum_value(std::string_view key, std::span<const Choice<E>> choices) {
    return choices[*choose(key, names_of(choices), true)].value;
  }
  template <typename E>
  E optional_enum(std::string_view key, E fallback, std::span<const Choice<E>> choices) {
    return maybe_enum(key, choices).value_or(fallback);
  }
  // A missing key gives std::nullopt.
  template <typename E>
  std::optional<E> maybe_enum(std::string_view key, std::span<const Choice<E>> choices) {
    const std::optional<std::size_t> index = choose(key, names_of(choices), false);
    if (!index) return std::nullopt;
    return choices[*index].value;
  }

  // A nested object (required, or std::nullopt when absent).
  ObjectReader child(std::string_view key);
  std::optional<ObjectReader> optional_child(std::string_view key);

  // The raw value of `key`, or nullptr when absent; marks the key as read.
  const nlohmann::json* find(std::string_view key);

  // Rejects every present key that was neither read nor declared with expect_keys():
  // "unknown key 'foo'; expected one of: a, b, c" (known keys in the order they were declared; the
  // unknown key cut to 60 characters).
  void finish() const;

  // Errors located at `key` of this object, and at this object itself.
  core::InputError error_at(std::string_view key, const std::string& message) const;
  core::InputError error_here(const std::string& message) const;
  // "got <value>[ (<type>)]; expected <expected>" at `key`; the type is shown when `type_mismatch`.
  core::InputError mismatch(std::string_view key, std::string_view expected,
                            bool type_mismatch = false) const;

 private:
  const nlohmann::json* lookup(std::string_view key);  // marks as known and read; nullptr if absent
  // Index of the chosen name; std::nullopt when the key is absent and not `required`.
  std::optional<std::size_t> choose(std::string_view key, const std::vector<std::string_view>& names,
                                    bool required);
  template <typename T>
  T convert(std::string_view key, const nlohmann::json& value, const Rule<T>& rule) const;

  template <typename E>
  static std::vector<std::string_view> names_of(std::span<const Choice<E>> choices) {
    std::vector<std::string_view> names;
    names.reserve(choices.size());
    for (const Choice<E>& c : choices) names.push_back(c.name);
    return names;
  }

  const nlohmann::json* value_;
  std::string file_;
  std::string pointer_;
  std::vector<std::string> known_;           // declared or asked-for keys, in first-seen order
  std::set<std::string, std::less<>> read_;  // keys present and read
};

}  // namespace dtsim::config
