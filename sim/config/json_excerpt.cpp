#include "config/json_excerpt.hpp"

#include <algorithm>

#include <nlohmann/json.hpp>

namespace dtsim::config {

using nlohmann::json;

namespace {

constexpr std::size_t kDescribedLength = 60;

bool continuation_byte(char c) { return (static_cast<unsigned char>(c) & 0xC0U) == 0x80U; }

// The first `length` bytes of `s` (all of it when shorter), moved back by up to three bytes so as not
// to split a UTF-8 sequence, dumped as a JSON string with its quotes.
std::string dump_prefix(std::string_view s, std::size_t length) {
  std::size_t cut = std::min(s.size(), length);
  for (int back = 0; back < 3 && cut > 0 && cut < s.size() && continuation_byte(s[cut]); ++back) --cut;
  return json(std::string(s.substr(0, cut))).dump(-1, ' ', false, json::error_handler_t::replace);
}

// `text` cut to `limit` bytes with "..." when longer, not splitting a UTF-8 sequence.
std::string cut_to(std::string text, std::size_t limit) {
  if (text.size() <= limit) return text;
  std::size_t cut = limit - 3;
  while (cut > 0 && continuation_byte(text[cut])) --cut;
  text.resize(cut);
  return text + "...";
}

// Writes a value as dump() would, stopping once more than `limit_` characters are written. Each level
// of recursion writes at least one character ('[' or '{') before it descends, so the recursion is at
// most limit_ + 1 levels deep.
class ExcerptWriter {
 public:
  explicit ExcerptWriter(std::size_t limit) : limit_(limit) {}

  void value(const json& v) {
    if (full()) return;
    if (v.is_object()) {
      out_ += '{';
      for (auto it = v.begin(); it != v.end() && !full(); ++it) {
        if (it != v.begin()) out_ += ',';
        string(it.key());
        out_ += ':';
        value(it.value());
      }
      if (!full()) out_ += '}';
    } else if (v.is_array()) {
      out_ += '[';
      for (auto it = v.begin(); it != v.end() && !full(); ++it) {
        if (it != v.begin()) out_ += ',';
        value(*it);
      }
      if (!full()) out_ += ']';
    } else if (v.is_string()) {
      string(v.get_ref<const std::string&>());
    } else {
      out_ += v.dump();  // a number, boolean or null: short
    }
  }

  // A string with its quotes. Only a prefix of a long string is escaped: a prefix of limit_ + 1
  // bytes or more already fills the excerpt.
  void string(std::string_view s) { out_ += dump_prefix(s, limit_ + 4); }

  // What was written, cut to limit_ characters with "..." when longer.
  std::string finish() && { return cut_to(std::move(out_), limit_); }

 private:
  bool full() const { return out_.size() > limit_; }

  std::size_t limit_;
  std::string out_;
};

}  // namespace

std::string json_excerpt(const json& value, std::size_t max_chars) {
  ExcerptWriter writer(std::max<std::size_t>(max_chars, 4));
  writer.value(value);
  return std::move(writer).finish();
}

std::string string_excerpt(std::string_view text, std::size_t max_chars) {
  max_chars = std::max<std::size_t>(max_chars, 4);
  const std::string quoted = dump_prefix(text, max_chars + 4);
  // Without its quotes; a prefix cut short is longer than max_chars, and cut_to() marks it.
  return cut_to(quoted.substr(1, quoted.size() - 2), max_chars);
}

std::string describe_value(const json& value) { return json_excerpt(value, kDescribedLength); }

}  // namespace dtsim::config
