// main() of the Catch2 test executables without SystemC; Catch2 itself is
// compiled once in unit/catch_session.cpp.
#include "tests/unit/catch_session.h"

int main(int argc, char* argv[]) { return tdmsim_catch_run(argc, argv); }
