#include "core/errors.hpp"

#include <fmt/format.h>

namespace dtsim::core {

namespace {
std::string describe(const std::string& file, const std::string& pointer, const std::string& message) {
  std::string out;
  if (!file.empty()) out += file + ": ";
  if (!pointer.empty()) out += pointer + ": ";
  return out + message;
}
}  // namespace

InputError::InputError(std::string file, std::string pointer, std::string message)
    : std::runtime_error(describe(file, pointer, message)),
      file_(std::move(file)),
      pointer_(std::move(pointer)),
      message_(std::move(message)) {}

void fail_check(const char* condition, const char* file, int line, const std::string& message) {
  throw InternalError(fmt::format("internal error: check '{}' failed at {}:{}: {}", condition, file, line, message));
}

}  // namespace dtsim::core
