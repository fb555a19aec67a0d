# Output handling (issue 19, item 9): unit tests of the writer and the staged
# folder, and CLI checks over every command that writes output
# (tests/cli/output_checks.py documents each mode).
add_executable(tdmsim_output_tests unit/test_output_dir.cpp)
target_link_libraries(tdmsim_output_tests PRIVATE tdmsim_cli tdmsim_workloads tdmsim_catch_main)
tdmsim_set_warnings(tdmsim_output_tests)
list(APPEND tdmsim_catch_targets tdmsim_output_tests)

set(OUTPUT_WORK ${CMAKE_CURRENT_BINARY_DIR}/output_checks)
foreach(mode refuse inputs badpath enospc stale signal stdout plot)
  add_test(NAME output.cli_${mode}
           COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/cli/output_checks.py ${TDMSIM_BIN} ${OUTPUT_WORK} ${mode})
  set_tests_properties(output.cli_${mode} PROPERTIES TIMEOUT 300 SKIP_RETURN_CODE 77)
endforeach()

# The YAML configuration loader under libFuzzer (issue 19, item 12), beside
# fuzz.yaml_config: built with clang by tests/fuzz/run_fuzz.sh, 15 s of
# fuzzing from seeds written at start from workloads/ and tests/data/bad/; skipped
# (exit 77) where clang++ or its libFuzzer runtime is missing.
add_test(NAME fuzz.yaml_config
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/run_fuzz.sh ${CMAKE_CURRENT_BINARY_DIR}/fuzz-yaml 15 yaml_config)
set_tests_properties(fuzz.yaml_config PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 600 LABELS fuzz)
# run_fuzz.sh's guard for the file it compiles beside the unity file (the loader):
# missing, it stops with exit 2 naming it, before compiling anything.
add_test(NAME fuzz.yaml_config_loader_guard
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/loader_guard_check.sh ${CMAKE_CURRENT_BINARY_DIR}/fuzz-loader-guard)
set_tests_properties(fuzz.yaml_config_loader_guard PROPERTIES SKIP_RETURN_CODE 77 LABELS fuzz)
