// Catch2's implementation (its session, reporters and matchers), compiled once
// for every Catch2 test executable (tests/CMakeLists.txt). Catch2 v2 declares
// Catch::Session only beside its implementation, so the runners
// (unit/main.cpp's main, sim/sim_test_main.cpp's sc_main) call it through
// tdmsim_catch_run.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include "tests/unit/catch_session.h"

int tdmsim_catch_run(int argc, char* argv[]) { return Catch::Session().run(argc, argv); }
