// Chrome trace event format (the "JSON Object Format" of the Trace Event Format document), as
// Perfetto and chrome://tracing read it: one process per simulated rank, one thread per stream,
// metadata events ("M") naming and ordering them, one complete event ("X") per task span.
// Timestamps and durations are in microseconds (the format's unit): nanoseconds / 1000, written in
// their shortest round-trip form. Events are written one per line, in the record's order.
#include <iterator>
#include <ostream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/errors.hpp"
#include "reports/reports.hpp"

namespace dtsim::reports {

namespace {

constexpr double kNsPerUs = 1000.0;
constexpr std::size_t kFlushBytes = 1 << 20;

// A JSON string literal, quotes included.
std::string quoted(const std::string& text) {
  return nlohmann::json(text).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// The "traceEvents" array, buffered and written to the stream in large pieces.
class EventWriter {
 public:
  explicit EventWriter(std::ostream& out) : out_(out) {}

  // Starts the next event (separated from the previous one) and returns where to format it.
  auto next() {
    if (!first_) buf_.append(std::string_view(",\n"));
    first_ = false;
    return std::back_inserter(buf_);
  }
  void append(std::string_view text) { buf_.append(text); }
  void flush_if_full() {
    if (buf_.size() >= kFlushBytes) flush();
  }
  void flush() {
    out_.write(buf_.data(), static_cast<std::streamsize>(buf_.size()));
    buf_.clear();
  }

 private:
  std::ostream& out_;
  fmt::memory_buffer buf_;
  bool first_ = true;
};

void write_metadata(EventWriter& w, const results::Trace& trace) {
  for (std::size_t rank = 0; rank < trace.rank_names.size(); ++rank) {
    fmt::format_to(w.next(), R"({{"name":"process_name","ph":"M","pid":{},"tid":0,"args":{{"name":{}}}}})",
                   rank, quoted(trace.rank_names[rank]));
    fmt::format_to(
        w.next(), R"({{"name":"process_sort_index","ph":"M","pid":{0},"tid":0,"args":{{"sort_index":{0}}}}})",
        rank);
  }
  for (std::size_t track = 0; track < trace.tracks.size(); ++track) {
    const results::TraceTrack& t = trace.tracks[track];
    DTSIM_CHECK(t.rank < trace.rank_names.size(), "trace track on a rank without a name");
    fmt::format_to(w.next(), R"({{"name":"thread_name","ph":"M","pid":{},"tid":{},"args":{{"name":{}}}}})",
                   t.rank, track, quoted(t.name));
    fmt::format_to(
        w.next(),
        R"({{"name":"thread_sort_index","ph":"M","pid":{0},"tid":{1},"args":{{"sort_index":{1}}}}})", t.rank,
        track);
  }
}

}  // namespace

void write_chrome_trace(std::ostream& out, const results::Result& result) {
  DTSIM_CHECK(result.trace.has_value(), "a Chrome trace needs a result recorded with a trace");
  const results::Trace& trace = *result.trace;

  // Labels are escaped once; spans refer to them by index. The closing quote is left off: a span
  // appends its micro-batch first.
  std::vector<std::string> labels;
  labels.reserve(trace.labels.size());
  for (const std::string& label : trace.labels) {
    labels.push_back(quoted(label));
    labels.back().pop_back();
  }

  out << "{\"traceEvents\":[\n";
  EventWriter w(out);
  write_metadata(w, trace);
  for (const results::TraceSpan& s : trace.spans) {
    DTSIM_CHECK(s.track < trace.tracks.size(), "trace span on an unknown track");
    DTSIM_CHECK(s.label < labels.size(), "trace span with an unknown label");
    DTSIM_CHECK(s.end_ns >= s.start_ns, "trace span ends before it starts");
    auto it = fmt::format_to(w.next(), R"({{"name":{})", labels[s.label]);
    if (s.micro_batch >= 0) it = fmt::format_to(it, " mb{}", s.micro_batch);
    fmt::format_to(it, R"(","cat":"{}","ph":"X","pid":{},"tid":{},"ts":{},"dur":{}}})",
                   graph::to_string(s.category), trace.tracks[s.track].rank, s.track,
                   static_cast<double>(s.start_ns) / kNsPerUs,
                   static_cast<double>(s.end_ns - s.start_ns) / kNsPerUs);
    w.flush_if_full();
  }
  w.append("\n],\n\"displayTimeUnit\":\"ns\"}\n");
  w.flush();
}

}  // namespace dtsim::reports
