// A small well-formedness check for the XML the reports write (SVG, XHTML): every start tag closed in
// order, attribute values quoted, no raw '<' or '&' outside markup and entities. Not a full XML
// parser: enough to catch unbalanced or unescaped output. Returns "" when well-formed, else what is
// wrong and where.
#pragma once

#include <cctype>
#include <string>
#include <vector>

namespace dtsim::test {

inline std::string xml_error(const std::string& text) {
  std::vector<std::string> open;
  std::size_t i = 0;
  const auto where = [&](std::size_t at) { return " at byte " + std::to_string(at); };
  while (i < text.size()) {
    const char c = text[i];
    if (c == '&') {
      const std::size_t semi = text.find(';', i);
      if (semi == std::string::npos || semi - i > 8) return "bare '&'" + where(i);
      i = semi + 1;
      continue;
    }
    if (c != '<') {
      if (c == '>') return "bare '>'" + where(i);
      ++i;
      continue;
    }
    if (text.compare(i, 2, "<!") == 0 || text.compare(i, 2, "<?") == 0) {
      const std::size_t end = text.find('>', i);
      if (end == std::string::npos) return "unterminated declaration" + where(i);
      i = end + 1;
      continue;
    }
    const bool closing = i + 1 < text.size() && text[i + 1] == '/';
    std::size_t j = i + (closing ? 2 : 1);
    const std::size_t name_start = j;
    while (j < text.size() && (std::isalnum(static_cast<unsigned char>(text[j])) || text[j] == '-' ||
                               text[j] == ':' || text[j] == '_')) {
      ++j;
    }
    const std::string name = text.substr(name_start, j - name_start);
    if (name.empty()) return "tag without a name" + where(i);
    // Attributes: name="value" pairs up to '>' or '/>'.
    bool self_closing = false;
    while (true) {
      while (j < text.size() && std::isspace(static_cast<unsigned char>(text[j]))) ++j;
      if (j >= text.size()) return "unterminated tag <" + name + where(i);
      if (text[j] == '>') break;
      if (text.compare(j, 2, "/>") == 0) {
        self_closing = true;
        ++j;
        break;
      }
      const std::size_t eq = text.find('=', j);
      if (eq == std::string::npos || eq + 1 >= text.size() || (text[eq + 1] != '"' && text[eq + 1] != '\'')) {
        return "unquoted attribute in <" + name + where(j);
      }
      const std::size_t close = text.find(text[eq + 1], eq + 2);
      if (close == std::string::npos) return "unterminated attribute in <" + name + where(j);
      if (text.substr(eq + 2, close - eq - 2).find('<') != std::string::npos)
        return "'<' in an attribute" + where(j);
      j = close + 1;
    }
    if (closing) {
      if (open.empty() || open.back() != name) {
        return "</" + name + "> closes " + (open.empty() ? std::string("nothing") : "<" + open.back() + ">") +
               where(i);
      }
      open.pop_back();
    } else if (!self_closing) {
      open.push_back(name);
    }
    i = j + 1;
  }
  if (!open.empty()) return "<" + open.back() + "> is never closed";
  return "";
}

}  // namespace dtsim::test
