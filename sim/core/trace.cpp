#include "sim/core/trace.h"

#include <nlohmann/json.hpp>

namespace tdmsim::sim {

std::uint32_t TraceWriter::process(const std::string& name) {
  processes_.push_back(name);
  const auto pid = static_cast<std::uint32_t>(processes_.size());
  events_.push_back({'M', pid, 0, name, 0, 0, 0});
  return pid;
}

void TraceWriter::thread_name(std::uint32_t pid, std::uint32_t tid, const std::string& name) {
  events_.push_back({'T', pid, tid, name, 0, 0, 0});
}

void TraceWriter::slice(std::uint32_t pid, std::uint32_t tid, const std::string& name, Tick start,
                        Tick end) {
  events_.push_back({'X', pid, tid, name, start, end - start, 0});
}

void TraceWriter::counter(std::uint32_t pid, const std::string& name, Tick at, double value) {
  events_.push_back({'C', pid, 0, name, at, 0, value});
}

std::string TraceWriter::to_json() const {
  nlohmann::json events = nlohmann::json::array();
  for (const auto& e : events_) {
    nlohmann::json j;
    j["pid"] = e.pid;
    j["tid"] = e.tid;
    switch (e.phase) {
      case 'M':
        j["ph"] = "M";
        j["name"] = "process_name";
        j["args"] = {{"name", e.name}};
        break;
      case 'T':
        j["ph"] = "M";
        j["name"] = "thread_name";
        j["args"] = {{"name", e.name}};
        break;
      case 'X':
        j["ph"] = "X";
        j["name"] = e.name;
        j["ts"] = static_cast<double>(e.ts) * 1e-6;
        j["dur"] = static_cast<double>(e.dur) * 1e-6;
        break;
      default:
        j["ph"] = "C";
        j["name"] = e.name;
        j["ts"] = static_cast<double>(e.ts) * 1e-6;
        j["args"] = {{"value", e.value}};
        break;
    }
    events.push_back(std::move(j));
  }
  nlohmann::json doc;
  doc["traceEvents"] = std::move(events);
  doc["displayTimeUnit"] = "ns";
  return doc.dump() + "\n";
}

}  // namespace tdmsim::sim
