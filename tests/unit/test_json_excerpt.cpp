// Unit tests of bounded excerpts of JSON values in messages (sim/config/json_excerpt.hpp): the same
// text as dump() for short values, a cut at the budget that does not split UTF-8, and time and stack in
// proportion to the budget, not to the value (a million levels deep, a million elements).
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/json_excerpt.hpp"

namespace {

using dtsim::config::describe_value;
using nlohmann::json;

}  // namespace

TEST_CASE("excerpts: as dump() for short values, cut at 60 characters, never deeper than the budget") {
  for (const char* text : {R"({"a":[1,2.5,null,true],"b":"x\"y"})", R"("caf\u00e9")", "[]", "{}", "-1"}) {
    const json v = json::parse(text);
    CHECK(describe_value(v) == v.dump());
  }
  // A 1 MB string: its first 57 bytes and "...".
  const std::string d = describe_value(json(std::string(1'000'000, 'y')));
  CHECK(d == std::string("\"").append(56, 'y').append("..."));
  // Invalid UTF-8 is replaced as dump(replace) does; a cut does not split a sequence: after `"x`,
  // 55 bytes of 2-byte "é" end inside the 28th, which is left out (27 of them, 54 bytes).
  CHECK(describe_value(json(std::string("a\xff"))) == "\"a\xef\xbf\xbd\"");
  std::string accents;
  for (int i = 0; i < 100; ++i) accents += "\xc3\xa9";
  CHECK(describe_value(json("x" + accents)) == "\"x" + accents.substr(0, 54) + "...");
  // A million levels deep (built iteratively; nlohmann destroys it iteratively too): "[" x 57 + "...".
  json deep = json::array();
  for (int i = 0; i < 1'000'000; ++i) {
    json outer = json::array();
    outer.push_back(std::move(deep));
    deep = std::move(outer);
  }
  CHECK(describe_value(deep) == std::string(57, '[') + "...");
  // A huge array costs what its first elements do: "[7,7,7,7,7," passes 10 characters, cut to 7 + "...".
  CHECK(dtsim::config::json_excerpt(json(std::vector<int>(1'000'000, 7)), 10) == "[7,7,7,...");
}

TEST_CASE("string excerpts: a key as written inside its quotes, cut") {
  CHECK(dtsim::config::string_excerpt("a\"b\n", 60) == "a\\\"b\\n");
  CHECK(dtsim::config::string_excerpt(std::string(100, 'k'), 10) == "kkkkkkk...");
  CHECK(dtsim::config::string_excerpt(std::string(10, 'k'), 10) == "kkkkkkkkkk");
}
