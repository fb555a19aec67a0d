# Issue 19, input hardening: every user-named input file is read only if it is
# a regular file within its size limit; /dev/zero, FIFOs, folders, over-limit
# files, symbolic-link loops and names too long exit 2 at once, naming the file
# and, when a key named it, file:line:column and the key. Included from
# tests/CMakeLists.txt.
target_sources(tdmsim_unit_tests PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_input_file.cpp)

set(HI_WORK ${CMAKE_CURRENT_BINARY_DIR}/hard-input)
set(HI_EXPECT ${CMAKE_CURRENT_SOURCE_DIR}/cli/expect_rc.cmake)
string(REPEAT "a" 300 HI_LONG)
add_test(NAME input.setup
         COMMAND ${CMAKE_COMMAND} -DWORK=${HI_WORK} -DSRC=${PROJECT_SOURCE_DIR}
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/cli/hardening_hard-input_setup.cmake)
set_tests_properties(input.setup PROPERTIES FIXTURES_SETUP hard_input_files)

# input_test(NAME "ARG;ARG..." STDERR-REGEX [MUST_NOT_EXIST path]): tdmsim ARGs exit 2
# within 30 s (a FIFO that blocked would hit the timeout) and stderr matches.
function(input_test name args stderr)
  string(REPLACE ";" "\\;" args "${args}")
  set(extra)
  if(ARGN)
    set(extra -DMUST_NOT_EXIST=${ARGN})
  endif()
  add_test(NAME input.${name}
           COMMAND ${CMAKE_COMMAND} -DCMD=${TDMSIM_BIN}\;${args} -DEXPECT_RC=2
                   "-DEXPECT_STDERR=${stderr}" ${extra} -P ${HI_EXPECT})
  set_tests_properties(input.${name} PROPERTIES FIXTURES_REQUIRED hard_input_files TIMEOUT 30)
endfunction()

# On the command line.
input_test(validate_dev_zero "config;validate;/dev/zero"
           "/dev/zero: is not a regular file \\(a character device\\)")
input_test(validate_fifo "config;validate;${HI_WORK}/fifo.yaml"
           "fifo.yaml: is not a regular file \\(a FIFO\\)")
input_test(show_fifo "config;show;${HI_WORK}/fifo.yaml"
           "fifo.yaml: is not a regular file \\(a FIFO\\)")
input_test(validate_folder "config;validate;${HI_WORK}/folder.yaml" "folder.yaml")
input_test(validate_over_limit "config;validate;${HI_WORK}/big.yaml"
           "big.yaml: is 16777217 bytes, over the 16 MiB limit for a YAML file")
input_test(validate_symlink_loop "config;validate;${HI_WORK}/loop.yaml" "loop.yaml")
input_test(validate_name_too_long "config;validate;${HI_WORK}/${HI_LONG}.yaml" "aaaa.yaml")
input_test(describe_dev_zero "describe;/dev/zero"
           "/dev/zero: is not a regular file \\(a character device\\)")
input_test(describe_fifo "describe;${HI_WORK}/fifo.tdmm"
           "fifo.tdmm: is not a regular file \\(a FIFO\\)")
input_test(describe_folder "describe;${HI_WORK}" "hard-input: is a folder, not a file")
input_test(describe_over_limit "describe;${HI_WORK}/big.tdmm"
           "big.tdmm: is 268435457 bytes, over the 256 MiB limit for a descriptor file")
input_test(describe_symlink_loop "describe;${HI_WORK}/loop.yaml"
           "loop.yaml: cannot be read \\(too many levels of symbolic links\\)")
input_test(describe_name_too_long "describe;${HI_WORK}/${HI_LONG}.tdmm"
           "aaaa.tdmm: cannot be read \\(file name too long\\)")

# Through keys: file:line:column, the key, then the file and why.
input_test(base_dev_zero "config;validate;${HI_WORK}/base__dev_zero.yaml"
           "base__dev_zero.yaml:2:7: base: base file '/dev/zero' is not a regular file \\(a character device\\)")
input_test(base_fifo "config;validate;${HI_WORK}/base_fifo_yaml.yaml"
           "base_fifo_yaml.yaml:2:7: base: base file '[^']*fifo.yaml' is not a regular file \\(a FIFO\\)")
input_test(base_folder "config;validate;${HI_WORK}/base_folder_yaml.yaml"
           "base_folder_yaml.yaml:2:7: base: base file '[^']*folder.yaml' is a folder, not a file")
input_test(base_over_limit "config;validate;${HI_WORK}/base_big_yaml.yaml"
           "base_big_yaml.yaml:2:7: base: base file '[^']*big.yaml' is 16777217 bytes, over the 16 MiB limit")
input_test(base_symlink_loop "config;validate;${HI_WORK}/base_loop_yaml.yaml"
           "base_loop_yaml.yaml:2:7: base: base file '[^']*loop.yaml' cannot be read \\(too many levels of symbolic links\\)")
input_test(base_name_too_long "config;validate;${HI_WORK}/base_aaaaaaaaaaaa.yaml"
           "base_aaaaaaaaaaaa.yaml:2:7: base: base file '[^']*aaaa.yaml' cannot be read \\(file name too long\\)")
input_test(model_fifo "config;validate;${HI_WORK}/model_fifo.yaml"
           "model_fifo.yaml:3:8: model: file '[^']*fifo.yaml' is not a regular file \\(a FIFO\\)")
input_test(machine_symlink_loop "config;validate;${HI_WORK}/machine_loop.yaml"
           "machine_loop.yaml:3:10: machine: file '[^']*loop.yaml' cannot be read \\(too many levels of symbolic links\\)")
input_test(machine_name_too_long "config;validate;${HI_WORK}/machine_long.yaml"
           "machine_long.yaml:3:10: machine: file '[^']*aaaa.yaml' cannot be read \\(file name too long\\)")
input_test(machine_option_fifo "gpu-case;${HI_WORK}/model_fifo.yaml;--machine;${HI_WORK}/fifo.yaml;--output;${HI_WORK}/out_machine"
           "tdmsim: error: --machine: file '[^']*fifo.yaml' is not a regular file \\(a FIFO\\)" ${HI_WORK}/out_machine)
input_test(validate_trace_dev_zero "config;validate;${HI_WORK}/trace__dev_zero.yaml"
           "trace__dev_zero.yaml:4:10: routing.trace: routing trace '/dev/zero' is not a regular file \\(a character device\\)")
input_test(trace_dev_zero "gpu-case;${HI_WORK}/trace__dev_zero.yaml;--output;${HI_WORK}/out_zero"
           "trace__dev_zero.yaml:4:10: routing.trace: routing trace '/dev/zero' is not a regular file \\(a character device\\)"
           ${HI_WORK}/out_zero)
input_test(trace_fifo "gpu-case;${HI_WORK}/trace_fifo_trace.yaml;--output;${HI_WORK}/out_fifo"
           "trace_fifo_trace.yaml:4:10: routing.trace: routing trace '[^']*fifo.trace' is not a regular file \\(a FIFO\\)"
           ${HI_WORK}/out_fifo)
input_test(trace_over_limit "gpu-case;${HI_WORK}/trace_big_trace.yaml;--output;${HI_WORK}/out_big"
           "trace_big_trace.yaml:4:10: routing.trace: routing trace '[^']*big.trace' is 1073741825 bytes, over the 1 GiB limit"
           ${HI_WORK}/out_big)
# Sweeps: a scenario: key and a machine axis value naming files that cannot be read.
input_test(sweep_scenario_dev_zero "config;validate;${HI_WORK}/sweep_scenario_zero.yaml"
           "sweep_scenario_zero.yaml:3:11: scenario: file '/dev/zero' is not a regular file \\(a character device\\)")
input_test(sweep_axis_fifo "sweep;${HI_WORK}/sweep_axis_fifo.yaml;--output;${HI_WORK}/out_sweep"
           "sweep_axis_fifo.yaml:5:19: axes.machine: value './fifo.yaml': file '[^']*fifo.yaml' is not a regular file \\(a FIFO\\)"
           ${HI_WORK}/out_sweep)
