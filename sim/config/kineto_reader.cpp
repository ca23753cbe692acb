#include "config/kineto_reader.hpp"

#include <algorithm>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "config/json_reader.hpp"
#include "core/errors.hpp"

namespace dtsim::config {

namespace {

using nlohmann::json;

std::optional<std::array<std::int64_t, 3>> dims3(const json& args, const char* key, const std::string& file,
                                                 const std::string& pointer) {
  const auto it = args.find(key);
  if (it == args.end()) return std::nullopt;
  const bool ok = it->is_array() && it->size() == 3 && std::all_of(it->begin(), it->end(), [](const json& v) {
                    return v.is_number_integer() && v > 0;
                  });
  if (!ok) {
    throw core::InputError(
        file, pointer + "/args/" + key,
        fmt::format("got {}; expected three positive integers [x, y, z]", describe_value(*it)));
  }
  return std::array<std::int64_t, 3>{(*it)[0].get<std::int64_t>(), (*it)[1].get<std::int64_t>(),
                                     (*it)[2].get<std::int64_t>()};
}

std::optional<std::int64_t> external_id(const json& args) {
  const auto it = args.find("External id");
  if (it == args.end() || !it->is_number_integer()) return std::nullopt;
  return it->get<std::int64_t>();
}

std::optional<GpuActivity> activity_of(const std::string& cat) {
  if (cat == "kernel" || cat == "Kernel") return GpuActivity::kernel;
  if (cat == "gpu_memcpy" || cat == "Memcpy") return GpuActivity::memcpy;
  if (cat == "gpu_memset" || cat == "Memset") return GpuActivity::memset;
  return std::nullopt;
}

KinetoCpuOp cpu_op(const json& e, const json& args, std::int64_t id) {
  KinetoCpuOp op;
  op.name = e["name"].get<std::string>();
  op.external_id = id;
  if (const auto dims = args.find("Input Dims"); dims != args.end() && dims->is_array()) {
    for (const json& d : *dims) {
      std::vector<std::int64_t> shape;
      if (d.is_array()) {
        for (const json& v : d) {
          if (v.is_number_integer()) shape.push_back(v.get<std::int64_t>());
        }
      }
      op.input_dims.push_back(shape);
    }
  }
  if (const auto types = args.find("Input type"); types != args.end() && types->is_array()) {
    for (const json& t : *types) op.input_types.push_back(t.is_string() ? t.get<std::string>() : "");
  }
  return op;
}

}  // namespace

KinetoTrace parse_kineto_trace_text(const std::string& text, const std::string& file) {
  const json doc = parse_json_text(text, file, JsonLimits::trace());
  if (!doc.is_object()) {
    throw core::InputError(
        file, "",
        fmt::format("got {}; expected a Chrome trace object with \"traceEvents\"", describe_value(doc)));
  }
  const auto events = doc.find("traceEvents");
  if (events == doc.end()) {
    throw core::InputError(file, "/traceEvents",
                           "missing; expected the array of trace events of a Kineto trace");
  }
  if (!events->is_array()) {
    throw core::InputError(file, "/traceEvents",
                           fmt::format("got {}; expected an array of trace events", describe_value(*events)));
  }
  KinetoTrace trace;
  trace.file = file;
  for (std::size_t i = 0; i < events->size(); ++i) {
    const json& e = (*events)[i];
    const std::string pointer = fmt::format("/traceEvents/{}", i);
    if (!e.is_object()) {
      throw core::InputError(file, pointer,
                             fmt::format("got {}; expected an event object", describe_value(e)));
    }
    const auto ph = e.find("ph");
    const auto cat = e.find("cat");
    if (ph == e.end() || *ph != "X" || cat == e.end() || !cat->is_string()) continue;
    static const json kNoArgs = json::object();
    const auto args_it = e.find("args");
    if (args_it != e.end() && !args_it->is_object()) {
      throw core::InputError(file, pointer + "/args",
                             fmt::format("got {}; expected an object", describe_value(*args_it)));
    }
    const json& args = args_it != e.end() ? *args_it : kNoArgs;
    const auto name = e.find("name");
    if (*cat == "cpu_op") {
      const auto id = external_id(args);
      if (id && name != e.end() && name->is_string()) trace.cpu_ops.push_back(cpu_op(e, args, *id));
      continue;
    }
    const auto activity = activity_of(cat->get<std::string>());
    if (!activity) continue;
    if (name == e.end() || !name->is_string()) {
      throw core::InputError(file, pointer + "/name",
                             name == e.end()
                                 ? std::string("missing; expected the kernel name")
                                 : fmt::format("got {}; expected a string", describe_value(*name)));
    }
    const auto dur = e.find("dur");
    if (dur == e.end() || !dur->is_number() || dur->get<double>() < 0.0) {
      throw core::InputError(file, pointer + "/dur",
                             dur == e.end() ? std::string("missing; expected the duration in microseconds")
                                            : fmt::format("got {}; expected a duration in microseconds >= 0",
                                                          describe_value(*dur)));
    }
    KinetoGpuEvent g;
    g.name = name->get<std::string>();
    g.activity = *activity;
    g.duration_us = dur->get<double>();
    g.external_id = external_id(args);
    g.grid = dims3(args, "grid", file, pointer);
    g.block = dims3(args, "block", file, pointer);
    trace.gpu.push_back(std::move(g));
  }
  const bool any_kernel = std::any_of(trace.gpu.begin(), trace.gpu.end(), [](const KinetoGpuEvent& g) {
    return g.activity == GpuActivity::kernel;
  });
  if (!any_kernel) {
    throw core::InputError(
        file, "/traceEvents",
        "no GPU kernel events (\"ph\": \"X\", \"cat\": \"kernel\"): was the trace recorded with "
        "ProfilerActivity.CUDA?");
  }
  return trace;
}

KinetoTrace read_kineto_trace(const std::string& path) {
  return parse_kineto_trace_text(read_text_file(path, JsonLimits::trace()), path);
}

}  // namespace dtsim::config
