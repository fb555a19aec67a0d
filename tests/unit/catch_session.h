// Runs the Catch2 session on the command line (tests/unit/catch_session.cpp).
#pragma once

int tdmsim_catch_run(int argc, char* argv[]);

// As tdmsim_catch_run, but a command line that selects several test cases runs
// each in a child process of its own, and the exit status is 1 when any failed
// (for SystemC, which elaborates once per process).
int tdmsim_catch_run_each_in_child(int argc, char* argv[]);
