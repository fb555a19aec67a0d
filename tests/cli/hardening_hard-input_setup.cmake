# Creates the inputs of the hardening_hard-input.cmake tests in WORK: special
# files (a FIFO, a folder, a symbolic-link loop, sparse over-limit files, made
# here rather than committed) and YAML files that reach them through keys.
#   cmake -DWORK=dir -DSRC=project-source-dir -P hardening_hard-input_setup.cmake
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}/folder.yaml")
execute_process(COMMAND mkfifo "${WORK}/fifo.yaml" "${WORK}/fifo.tdmm" "${WORK}/fifo.trace"
                RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "mkfifo failed")
endif()
# Sparse: one byte over each limit (docs/architecture.md) without writing it.
execute_process(COMMAND truncate -s 16777217 "${WORK}/big.yaml" RESULT_VARIABLE rc1)
execute_process(COMMAND truncate -s 268435457 "${WORK}/big.tdmm" RESULT_VARIABLE rc2)
execute_process(COMMAND truncate -s 1073741825 "${WORK}/big.trace" RESULT_VARIABLE rc3)
if(NOT rc1 EQUAL 0 OR NOT rc2 EQUAL 0 OR NOT rc3 EQUAL 0)
  message(FATAL_ERROR "truncate failed")
endif()
file(CREATE_LINK "loop.yaml" "${WORK}/loop.yaml" SYMBOLIC)
string(REPEAT "a" 300 long)

foreach(target /dev/zero fifo.yaml folder.yaml big.yaml loop.yaml ${long}.yaml)
  string(REGEX REPLACE "[^a-z]" "_" tag "${target}")
  string(SUBSTRING "${tag}" 0 12 tag)
  file(WRITE "${WORK}/base_${tag}.yaml" "kind: machine\nbase: ${target}\n")
endforeach()

set(qwen "${SRC}/workloads/scenarios/qwen3-30b-decode-h200.yaml")
set(mixtral "${SRC}/workloads/scenarios/mixtral-8x7b-trace-mi300x.yaml")
file(WRITE "${WORK}/model_fifo.yaml" "kind: scenario\nbase: ${qwen}\nmodel: ./fifo.yaml\n")
file(WRITE "${WORK}/machine_loop.yaml" "kind: scenario\nbase: ${qwen}\nmachine: ./loop.yaml\n")
file(WRITE "${WORK}/machine_long.yaml" "kind: scenario\nbase: ${qwen}\nmachine: ./${long}.yaml\n")
foreach(trace /dev/zero fifo.trace big.trace)
  string(REGEX REPLACE "[^a-z]" "_" tag "${trace}")
  file(WRITE "${WORK}/trace_${tag}.yaml"
       "kind: scenario\nbase: ${mixtral}\nrouting:\n  trace: ${trace}\n")
endforeach()
file(WRITE "${WORK}/sweep_axis_fifo.yaml"
     "kind: sweep\nname: axis-fifo\nscenario: ${qwen}\naxes:\n  machine: [h200, ./fifo.yaml]\n")
file(WRITE "${WORK}/sweep_scenario_zero.yaml"
     "kind: sweep\nname: scenario-zero\nscenario: /dev/zero\naxes:\n  scenario.tokens: [1, 2]\n")
