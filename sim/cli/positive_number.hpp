// A CLI11 check that an option's value is a number above zero, with a message in the house form
// ("--top: got 0; expected a number above 0"); CLI11's own PositiveNumber prints the bounds of a double.
#pragma once

#include <string>

#include <CLI/CLI.hpp>

namespace dtsim::cli {

inline CLI::Validator positive_number() {
  return CLI::Validator(
      [](std::string& value) -> std::string {
        double number = 0.0;
        if (CLI::detail::lexical_cast(value, number) && number > 0.0) return "";
        return "got " + value + "; expected a number above 0";
      },
      "POSITIVE", "positive number");
}

}  // namespace dtsim::cli
