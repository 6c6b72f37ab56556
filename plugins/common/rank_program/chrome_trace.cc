#include "chrome_trace.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include "paraplan/sdk.hpp"

namespace rank_program {
namespace {

constexpr double kMicroseconds = 1e6;
constexpr double kGB = 1e9;  // decimal, as every report prints memory
// Bumped when a field changes meaning: 2 moved the memory counter from args.GiB to args.GB.
constexpr int kTraceFormat = 2;

// Escapes a label for a JSON string (labels are ours, but names come from plugins).
std::string escaped(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (unsigned char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char code[8];
      std::snprintf(code, sizeof(code), "\\u%04x", c);
      out += code;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

class TraceFile {
 public:
  explicit TraceFile(const std::string& path) : path_(path), file_(std::fopen(path.c_str(), "w"), &std::fclose) {
    if (!file_) fail();
    std::fprintf(file_.get(),
                 "{\"displayTimeUnit\":\"ms\",\"otherData\":{\"generator\":\"paraplan\",\"trace_format\":%d},"
                 "\"traceEvents\":[\n",
                 kTraceFormat);
  }

  void metadata(const char* name, int64_t pid, int64_t tid, const char* key, const std::string& value) {
    separate();
    if (tid < 0)
      std::fprintf(file_.get(), "{\"name\":\"%s\",\"ph\":\"M\",\"pid\":%lld,\"args\":{\"%s\":%s}}", name,
                   static_cast<long long>(pid), key, value.c_str());
    else
      std::fprintf(file_.get(), "{\"name\":\"%s\",\"ph\":\"M\",\"pid\":%lld,\"tid\":%lld,\"args\":{\"%s\":%s}}", name,
                   static_cast<long long>(pid), static_cast<long long>(tid), key, value.c_str());
  }

  void complete(const std::string& name, const char* category, int64_t pid, int64_t tid, double start, double end) {
    separate();
    std::fprintf(file_.get(),
                 "{\"name\":\"%s\",\"cat\":\"%s\",\"ph\":\"X\",\"pid\":%lld,\"tid\":%lld,\"ts\":%.3f,\"dur\":%.3f}",
                 escaped(name).c_str(), category, static_cast<long long>(pid), static_cast<long long>(tid),
                 start * kMicroseconds, (end - start) * kMicroseconds);
  }

  void counter(int64_t pid, double time, double gib) {
    separate();
    std::fprintf(file_.get(), "{\"name\":\"memory\",\"ph\":\"C\",\"pid\":%lld,\"ts\":%.3f,\"args\":{\"GB\":%.4f}}",
                 static_cast<long long>(pid), time * kMicroseconds, gib);
  }

  uint64_t close() {
    std::fputs("\n]}\n", file_.get());
    if (std::ferror(file_.get()) || std::fclose(file_.release()) != 0) fail();
    return events_;
  }

 private:
  void separate() {
    if (events_++ > 0) std::fputs(",\n", file_.get());
  }
  [[noreturn]] void fail() const {
    throw paraplan::InvalidArgument("cannot write the trace file " + path_ + ": " + std::strerror(errno));
  }

  std::string path_;
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file_;
  uint64_t events_ = 0;
};

std::string quoted(const std::string& text) { return "\"" + escaped(text) + "\""; }

}  // namespace

uint64_t write_chrome_trace(const std::string& path, const ProgramSet& programs, std::span<const RankTimeline> ranks) {
  TraceFile trace(path);
  for (const RankTimeline& timeline : ranks) {
    const int64_t pid = timeline.rank;
    const StageProgram& program = *timeline.program;
    trace.metadata("process_name", pid, -1, "name", quoted(timeline.process_name));
    trace.metadata("process_sort_index", pid, -1, "sort_index", std::to_string(pid));
    for (size_t stream = 0; stream < programs.streams.size(); ++stream) {
      if (program.first_on_stream[stream] < 0) continue;
      trace.metadata("thread_name", pid, static_cast<int64_t>(stream), "name", quoted(programs.streams[stream]));
      trace.metadata("thread_sort_index", pid, static_cast<int64_t>(stream), "sort_index", std::to_string(stream));
    }
    // Schedule steps: from the marker that opens one to the marker that closes it.
    std::vector<double> step_begin(program.step_labels.size(), -1.0);
    for (size_t i = 0; i < program.instructions.size(); ++i) {
      const Instruction& instruction = program.instructions[i];
      if (instruction.step < 0 || instruction.kind != Work::kMarker) continue;
      double& begin = step_begin[static_cast<size_t>(instruction.step)];
      if (!instruction.step_end) {
        if (begin < 0) begin = timeline.finish[i];
        continue;
      }
      trace.complete(program.step_labels[static_cast<size_t>(instruction.step)], "step", pid, 0, begin, timeline.finish[i]);
    }
    for (size_t i = 0; i < program.instructions.size(); ++i) {
      const Instruction& instruction = program.instructions[i];
      if (instruction.kind == Work::kMarker || instruction.kind == Work::kMemory) continue;
      if (timeline.finish[i] <= timeline.start[i]) continue;
      const char* category = instruction.kind == Work::kCompute && instruction.stream == 0 ? "compute" : "communication";
      trace.complete(program.labels[static_cast<size_t>(instruction.label)], category, pid, instruction.stream,
                     timeline.start[i], timeline.finish[i]);
    }
    for (const auto& [time, bytes] : timeline.memory) trace.counter(pid, time, bytes / kGB);
  }
  return trace.close();
}

}  // namespace rank_program
