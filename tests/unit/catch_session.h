// Runs the Catch2 session on the command line (tests/unit/catch_session.cpp).
#pragma once

int tdmsim_catch_run(int argc, char* argv[]);
