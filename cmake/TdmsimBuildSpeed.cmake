# Build-time measures (docs/performance.md "Build"): unity builds, precompiled
# headers and the optimisation level of test code.

# Unity builds: CMake compiles each target's sources in batches, one
# translation unit per batch, so the header-only templates (nlohmann/json,
# CLI11, Catch2, fmt's inline parts) that every file instantiates are parsed,
# optimised and emitted once per batch instead of once per file. That code
# generation is most of a compile (docs/performance.md "Build"). Files of one
# target therefore share a translation unit: a name with internal linkage
# (anonymous namespace, static) must be unique within its target, not just its
# file. -DTDMSIM_UNITY=OFF compiles file by file (quicker rebuilds while
# editing a file of a large target); CI and the README's commands use ON.
option(TDMSIM_UNITY "Compile each target's sources in unity batches (faster full builds)" ON)
set(TDMSIM_UNITY_BATCH_SIZE 0 CACHE STRING
    "Sources per unity batch (0: a whole target in one translation unit)")
if(TDMSIM_UNITY)
  set(CMAKE_UNITY_BUILD ON)
  set(CMAKE_UNITY_BUILD_BATCH_SIZE ${TDMSIM_UNITY_BATCH_SIZE})
endif()
# tdmsim_precompile(target [SYSTEMC] [CLI] [CATCH]): precompile the third-party
# headers nearly every translation unit of the target parses anyway, so each
# file stops re-reading about 100k lines of them (docs/performance.md "Build").
# Only targets with many files use it (the header set costs about one file to
# precompile). Only headers of libraries the target already links are listed: SYSTEMC for
# targets compiled against SystemC, CLI for the command-line layer, CATCH for
# Catch2 test executables. A file that must see its own macros before a header
# (the Catch2 session, tests/unit/catch_session.cpp) is not in such a target.
option(TDMSIM_PCH "Precompile heavy third-party headers per target (faster builds)" ON)

function(tdmsim_precompile target)
  if(NOT TDMSIM_PCH)
    return()
  endif()
  cmake_parse_arguments(PCH "SYSTEMC;CLI;CATCH" "" "" ${ARGN})
  set(headers <algorithm> <cstdint> <filesystem> <functional> <map> <memory> <optional>
              <stdexcept> <string> <string_view> <vector> <fmt/core.h> <nlohmann/json.hpp>)
  if(PCH_SYSTEMC)
    list(APPEND headers <systemc> <tlm>)
  endif()
  if(PCH_CLI)
    list(APPEND headers <CLI/CLI.hpp>)
  endif()
  if(PCH_CATCH)
    list(APPEND headers <catch2/catch.hpp>)
  endif()
  target_precompile_headers(${target} PRIVATE ${headers})
endfunction()

# tdmsim_test_code(target): a test executable's own code is glue around the
# libraries under test, which keep the Release flags (-O3); compiling the glue
# at -O1 takes about 30% less time per file (docs/performance.md "Build") and
# leaves what is tested unchanged.
function(tdmsim_test_code target)
  target_compile_options(${target} PRIVATE $<$<CONFIG:Release>:-O1>)
endfunction()
