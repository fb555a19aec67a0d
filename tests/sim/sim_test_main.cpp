// Catch2 main for the SystemC block tests: SystemC wants sc_main, and allows
// one elaboration per process, so each test case builds its own small module
// tree and runs in a process of its own: CTest starts one per test case, and a
// command line that selects several (`tdmsim_sim_tests "[l2]"`, or no filter)
// runs each in a forked child (tdmsim_catch_run_each_in_child). Catch2 itself
// is compiled once in unit/catch_session.cpp.
#include <systemc>

#include "tests/unit/catch_session.h"

// (Visible: libsystemc.so calls it; the build hides symbols, CMakeLists.txt.)
__attribute__((visibility("default"))) int sc_main(int argc, char* argv[]) {
  sc_core::sc_report_handler::set_actions(sc_core::SC_INFO, sc_core::SC_DO_NOTHING);
  return tdmsim_catch_run_each_in_child(argc, argv);
}
