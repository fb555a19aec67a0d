// Chrome/Perfetto trace (trace.json, opens in ui.perfetto.dev): workgroups on
// CUs as slices, memory traffic as counters. Blocks hold a TraceWriter* that
// is null when tracing is off, so the cost when off is one pointer test.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/core/sim_time.h"

namespace tdmsim::sim {

class TraceWriter {
 public:
  // A named track group (a process in Chrome trace terms), e.g. "gpu.xcd[0]".
  std::uint32_t process(const std::string& name);
  // A track inside a group, e.g. "cu[17].slot[2]".
  void thread_name(std::uint32_t pid, std::uint32_t tid, const std::string& name);
  void slice(std::uint32_t pid, std::uint32_t tid, const std::string& name, Tick start, Tick end);
  void counter(std::uint32_t pid, const std::string& name, Tick at, double value);
  // The whole trace as Chrome JSON (timestamps in microseconds).
  std::string to_json() const;
  std::size_t events() const { return events_.size(); }

 private:
  struct Event {
    char phase;  // 'X' slice, 'C' counter, 'M' metadata
    std::uint32_t pid, tid;
    std::string name;
    Tick ts, dur;
    double value;
  };
  std::vector<Event> events_;
  std::vector<std::string> processes_;
};

}  // namespace tdmsim::sim
