// Errors out of the simulator and how the command line maps them to its exit
// codes: a configuration the model cannot simulate is bad input (exit 2),
// everything else an internal failure (exit 1). SystemC wraps an exception
// thrown inside a process in a report (E549, "uncaught exception"); the
// mapping unwraps it so the original message reaches the user.
#pragma once

#include <exception>
#include <stdexcept>
#include <string>

namespace sc_core {
class sc_report;
}

namespace tdmsim::sim {

// The machine (or a command's sizes) describe something the model cannot
// run: a kernel that does not fit on a CU, more host memory than allowed.
// Thrown before simulation starts, never from inside a SystemC process.
struct NotSimulatable : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A run that made no progress within its limit (Gpu::run's time limit) or
// stopped with kernels unfinished (nothing left to happen: a deadlock).
struct SimulationStalled : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// What a command tells a user whose run ran out of host memory (std::bad_alloc):
// classify's message, and the commands outside the simulator's library
// (emulate, gpu-case, describe: tdmsim_cli, free of SystemC) print it too.
inline constexpr const char* kOutOfHostMemory =
    "out of host memory (set TDMSIM_MEMORY_LIMIT below the memory this machine has, so that a run too "
    "large is refused before it starts; docs/simulator.md)";

// What a command does with an exception that reached it.
struct Failure {
  bool bad_input = false;  // exit 2 (else 1)
  std::string message;     // one line or more, no "error:" prefix
};

// Maps any exception (a SystemC report, NotSimulatable, SimulationStalled,
// std::exception, anything else) to the exit-code contract.
Failure classify(const std::exception_ptr& e);

// A SystemC report's text without SystemC's framing: for E549 the message of
// the exception the process threw, otherwise "SystemC <type>: <message>".
std::string report_text(const sc_core::sc_report& r);

}  // namespace tdmsim::sim
