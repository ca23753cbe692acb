// Bounded excerpts of JSON values for error messages: a value is printed compactly as JSON, as
// nlohmann's dump(), but only its first characters, so that a message stays short whatever the value
// (a huge array, a megabyte string) and printing never recurses deeper than its character budget (a
// value nested a million levels deep prints as "[[[[...", without overflowing the stack).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

namespace dtsim::config {

// The value printed compactly as JSON (invalid UTF-8 replaced by U+FFFD); when that is longer than
// `max_chars` (at least 4), its first max_chars - 3 bytes (not splitting a UTF-8 sequence) and "...".
// Takes time and stack in proportion to max_chars, not to the value.
std::string json_excerpt(const nlohmann::json& value, std::size_t max_chars);

// A string as the body of a JSON string (control characters and quotes escaped, no surrounding
// quotes), cut like json_excerpt() to max_chars.
std::string string_excerpt(std::string_view text, std::size_t max_chars);

// json_excerpt() at 60 characters: the value shown in "got <value>; expected ..." messages.
std::string describe_value(const nlohmann::json& value);

}  // namespace dtsim::config
