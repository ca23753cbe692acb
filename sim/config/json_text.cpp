#include "config/json_text.hpp"

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <memory>
#include <system_error>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "config/json_reader.hpp"
#include "core/errors.hpp"

namespace dtsim::config {

using nlohmann::json;

namespace {

// Line and column (1-based) of byte offset `offset` in `text`.
std::pair<std::size_t, std::size_t> line_and_column(const std::string& text, std::size_t offset) {
  offset = std::min(offset, text.size());
  std::size_t line = 1;
  std::size_t line_start = 0;
  for (std::size_t i = 0; i < offset; ++i) {
    if (text[i] == '\n') {
      ++line;
      line_start = i + 1;
    }
  }
  return {line, offset - line_start + 1};
}

// nlohmann's explanation without its "[json.exception...] parse error at line L, column C: " prefix.
std::string parse_error_detail(const std::string& what) {
  const std::size_t column = what.find("column ");
  if (column != std::string::npos) {
    const std::size_t colon = what.find(": ", column);
    if (colon != std::string::npos) return what.substr(colon + 2);
  }
  const std::size_t bracket = what.find("] ");
  return bracket == std::string::npos ? what : what.substr(bracket + 2);
}

// "64 MiB (67108864 bytes)", "1 GiB (1073741824 bytes)", "100 bytes".
std::string size_text(std::size_t bytes) {
  constexpr std::size_t kGiB = std::size_t{1} << 30U;
  constexpr std::size_t kMiB = std::size_t{1} << 20U;
  if (bytes >= kGiB && bytes % kGiB == 0) return fmt::format("{} GiB ({} bytes)", bytes / kGiB, bytes);
  if (bytes >= kMiB && bytes % kMiB == 0) return fmt::format("{} MiB ({} bytes)", bytes / kMiB, bytes);
  return fmt::format("{} bytes", bytes);
}

core::InputError too_large(const std::string& source, const JsonLimits& limits) {
  return core::InputError(
      source, "",
      fmt::format("input is larger than {}, the limit for {}", size_text(limits.max_bytes), limits.kind));
}

// Appends what is left of `in` to `text`, reading at most limits.max_bytes + 1 bytes in all; throws
// when there were more than limits.max_bytes.
void read_bounded(std::istream& in, std::string& text, const std::string& source, const JsonLimits& limits) {
  // Not zero-filled: most inputs are a few kB, read once per file of a scenario.
  constexpr std::size_t kChunk = std::size_t{64} << 10U;
  const auto chunk = std::make_unique_for_overwrite<char[]>(kChunk);
  while (in && text.size() <= limits.max_bytes) {
    const std::size_t wanted = std::min(kChunk, limits.max_bytes + 1 - text.size());
    in.read(chunk.get(), static_cast<std::streamsize>(wanted));
    text.append(chunk.get(), static_cast<std::size_t>(in.gcount()));
  }
  if (text.size() > limits.max_bytes) throw too_large(source, limits);
}

// Builds the DOM from nlohmann's SAX events (as its own json_sax_dom_parser does), rejecting
// duplicate keys. Containers being built sit on a stack; a value goes into the innermost one, at the
// end of an array or under the object's last key.
class DomBuilder {
 public:
  DomBuilder(const std::string& source, std::size_t max_depth) : source_(&source), max_depth_(max_depth) {}

  json take() { return std::move(root_); }

  bool null() { return add(nullptr) != nullptr; }
  bool boolean(bool v) { return add(v) != nullptr; }
  bool number_integer(json::number_integer_t v) { return add(v) != nullptr; }
  bool number_unsigned(json::number_unsigned_t v) { return add(v) != nullptr; }
  bool number_float(json::number_float_t v, const json::string_t& /*text*/) { return add(v) != nullptr; }
  bool string(json::string_t& v) { return add(std::move(v)) != nullptr; }
  bool binary(json::binary_t& v) { return add(json::binary(std::move(v))) != nullptr; }

  bool start_object(std::size_t /*elements*/) { return open(json::object()); }
  bool start_array(std::size_t /*elements*/) { return open(json::array()); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }

  bool key(json::string_t& k) {
    auto& object = open_.back().container->get_ref<json::object_t&>();
    const auto [it, inserted] = object.try_emplace(std::move(k));
    if (!inserted) {
      throw core::InputError(*source_, pointer_append(open_pointer(), it->first),
                             fmt::format("duplicate key '{}'", it->first));
    }
    open_.back().slot = &it->second;
    open_.back().key = &it->first;
    return true;
  }

  template <typename Exception>
  bool parse_error(std::size_t /*position*/, const std::string& /*token*/, const Exception& e) {
    throw e;
  }

 private:
  struct Open {
    json* container = nullptr;
    json* slot = nullptr;              // where an object's next value goes (set by key())
    const std::string* key = nullptr;  // that value's key
  };

  json* add(json&& value) {
    if (open_.empty()) {
      root_ = std::move(value);
      return &root_;
    }
    Open& top = open_.back();
    if (top.container->is_array()) {
      auto& array = top.container->get_ref<json::array_t&>();
      array.push_back(std::move(value));
      return &array.back();
    }
    *top.slot = std::move(value);
    return top.slot;
  }

  bool open(json&& container) {
    // check_json_limits() has bounded the depth already.
    DTSIM_CHECK(open_.size() < max_depth_, "JSON nesting passed the depth limit after the pre-scan");
    open_.push_back(Open{add(std::move(container))});
    return true;
  }

  bool close() {
    open_.pop_back();
    return true;
  }

  // JSON pointer of the innermost container being built.
  std::string open_pointer() const {
    std::string pointer;
    for (std::size_t i = 0; i + 1 < open_.size(); ++i) {
      pointer = open_[i].container->is_array() ? pointer_append(pointer, open_[i].container->size() - 1)
                                               : pointer_append(pointer, *open_[i].key);
    }
    return pointer;
  }

  const std::string* source_;
  std::size_t max_depth_;
  json root_;
  std::vector<Open> open_;
};

}  // namespace

// One pass over the text that tracks strings (with their escapes) and brackets outside them. It does
// not check the grammar: the parser does that next.
void check_json_limits(const std::string& text, const std::string& source, const JsonLimits& limits) {
  if (text.size() > limits.max_bytes) throw too_large(source, limits);
  std::size_t depth = 0;
  const std::size_t n = text.size();
  for (std::size_t i = 0; i < n; ++i) {
    const char c = text[i];
    if (c == '"') {
      const std::size_t open = i;
      for (++i; i < n && text[i] != '"'; ++i) {
        if (text[i] == '\\') ++i;
      }
      if (std::min(i, n) - open - 1 > limits.max_string_bytes) {
        const auto [line, column] = line_and_column(text, open);
        throw core::InputError(
            source, "",
            fmt::format("string longer than {} bytes at line {}, column {}; expected "
                        "strings of at most {} bytes in {}",
                        limits.max_string_bytes, line, column, limits.max_string_bytes, limits.kind));
      }
    } else if (c == '[' || c == '{') {
      if (++depth > limits.max_depth) {
        const auto [line, column] = line_and_column(text, i);
        throw core::InputError(source, "",
                               fmt::format("nesting deeper than {} levels at line {}, column {}; expected "
                                           "at most {} nested arrays and objects",
                                           limits.max_depth, line, column, limits.max_depth));
      }
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
}

json parse_json_text(const std::string& text, const std::string& source, const JsonLimits& limits) {
  check_json_limits(text, source, limits);
  if (std::all_of(text.begin(), text.end(),
                  [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; })) {
    throw core::InputError(source, "", "empty input; expected a JSON object");
  }
  try {
    DomBuilder builder(source, limits.max_depth);
    const bool parsed = json::sax_parse(text, &builder);
    DTSIM_CHECK(parsed, "the JSON parser stopped without an error");
    return builder.take();
  } catch (const json::parse_error& e) {
    const std::size_t offset = e.byte > 0 ? e.byte - 1 : 0;
    const auto [line, column] = line_and_column(text, offset);
    throw core::InputError(
        source, "",
        fmt::format("malformed JSON at line {}, column {}: {}", line, column, parse_error_detail(e.what())));
  } catch (const json::exception& e) {
    // e.g. out_of_range.406 "number overflow parsing '1e400'", which carries no position.
    throw core::InputError(source, "", fmt::format("malformed JSON: {}", parse_error_detail(e.what())));
  }
}

std::string read_text_file(const std::string& path, const JsonLimits& limits) {
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(status))
    throw core::InputError(path, "", "cannot open file: no such file");
  if (std::filesystem::is_directory(status))
    throw core::InputError(path, "", "cannot open file: it is a directory");
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const int code = errno;
    throw core::InputError(path, "",
                           fmt::format("cannot open file: {}", std::generic_category().message(code)));
  }
  std::string text;
  if (std::filesystem::is_regular_file(status)) {
    const std::uintmax_t size = std::filesystem::file_size(path, ec);
    if (!ec && size > limits.max_bytes) throw too_large(path, limits);
    if (!ec) text.reserve(static_cast<std::size_t>(size) + 1);
  }
  read_bounded(in, text, path, limits);
  if (in.bad()) throw core::InputError(path, "", "cannot open file: read error");
  return text;
}

std::string read_text_stream(std::istream& in, const std::string& source, const JsonLimits& limits) {
  std::string text;
  read_bounded(in, text, source, limits);
  if (in.bad()) throw core::InputError(source, "", "cannot read the input: read error");
  return text;
}

json read_json_file(const std::string& path, const JsonLimits& limits) {
  return parse_json_text(read_text_file(path, limits), path, limits);
}

}  // namespace dtsim::config
