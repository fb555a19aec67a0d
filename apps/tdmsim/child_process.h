// One simulation per process. SystemC elaborates a machine once per process
// and its blocks keep their state for the process's life (open HBM rows, the
// refresh phase, cache contents, simulated time and the quantum's phase), so
// a path run after another on the same machine would not start from a fresh
// one: `--path both` would give the TDM path a different time than
// `--path tdm`. Each simulation that must start fresh runs in a child process
// forked from one that has elaborated nothing.
#pragma once

#include <functional>
#include <string>

#include "workloads/config/writer.h"

namespace tdmsim::cli {

// Runs `work` in a forked child and returns what it returned (sent back
// through a pipe as CBOR, so doubles arrive bit-exact; strings of 1 KiB or
// more, such as a run's stats text, travel beside the CBOR as raw bytes). An exception in the
// child is rethrown here with its message and its exit-code class
// (sim::classify): bad input as sim::NotSimulatable, anything else as
// std::runtime_error. A child that dies (a signal, an abort) is reported as
// an internal error naming `what`. Call it only from a thread-free process
// that has not elaborated a SystemC model itself.
config::Json run_in_child(const std::string& what, const std::function<config::Json()>& work);

}  // namespace tdmsim::cli
