// Self-checks of the runner in sim_test_main.cpp, which runs each selected
// SystemC test case in a process of its own: two cases that each elaborate
// and simulate (the second would fail in a process that already ran the
// first), and one that fails when TDMSIM_SIM_RUNNER_FAIL is set, so CTest can
// see a failing case counted (tests/CMakeLists.txt, sim.runner_*).
#include <cstdlib>

#include <catch2/catch.hpp>
#include <systemc>

namespace {

struct Ticker : sc_core::sc_module {
  int ticks = 0;
  SC_HAS_PROCESS(Ticker);
  explicit Ticker(const sc_core::sc_module_name& name) : sc_core::sc_module(name) { SC_THREAD(run); }
  void run() {
    for (int i = 0; i < 3; ++i) {
      wait(1, sc_core::SC_NS);
      ++ticks;
    }
  }
};

int simulate_ticks() {
  Ticker t("ticker");
  sc_core::sc_start();
  return t.ticks;
}

}  // namespace

TEST_CASE("runner self-check: a module elaborates and simulates in this process (1)", "[runner]") {
  CHECK(simulate_ticks() == 3);
  CHECK(sc_core::sc_time_stamp() == sc_core::sc_time(3, sc_core::SC_NS));
}

TEST_CASE("runner self-check: a module elaborates and simulates in this process (2)", "[runner]") {
  CHECK(simulate_ticks() == 3);
}

TEST_CASE("runner self-check: TDMSIM_SIM_RUNNER_FAIL is not set", "[runner]") {
  CHECK(std::getenv("TDMSIM_SIM_RUNNER_FAIL") == nullptr);
}
