# ---- expert-parallel layers (issue 23 part 1; tests/cli/ep_checks.py): a layer
# on N GPUs, every rank simulated from one routing draw, the dispatch and combine
# on the machine's interconnect; docs/expert-parallel.md.
set(EP_WORK ${CMAKE_CURRENT_BINARY_DIR}/ep)
set(EP_SCENARIO ${PROJECT_SOURCE_DIR}/workloads/scenarios/qwen3-30b-decode-h200.yaml)
foreach(mode one layer placement sweep refuse)
  add_test(NAME ep.${mode}
           COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/cli/ep_checks.py ${TDMSIM_BIN} ${EP_WORK}/${mode} ${mode}
                   ${EP_SCENARIO})
endforeach()
# A GPU whose experts get no pick runs routing and sort only (it had crashed).
add_test(NAME ep.idle
         COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/cli/ep_checks.py ${TDMSIM_BIN} ${EP_WORK}/idle idle
                 ${PROJECT_SOURCE_DIR}/examples/c/tiny-model.yaml)
add_test(NAME ep.tdm
         COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/cli/ep_checks.py ${TDMSIM_BIN} ${EP_WORK}/tdm tdm
                 ${PROJECT_SOURCE_DIR}/workloads/scenarios/qwen3-30b-a3b-decode-mi500x-tdm.yaml)
# The dispatch and combine are collectives between whole GPUs: a partitioned
# machine is refused for an expert-parallel layer, as `tdmsim collective` refuses it.
add_test(NAME ep.partitioned_machine_refused
         COMMAND ${CMAKE_COMMAND} -DCMD=${TDMSIM_BIN}\;run\;${PROJECT_SOURCE_DIR}/workloads/scenarios/qwen3-30b-a3b-ep8-mi300x.yaml\;--machine\;mi300x-dpx
                 -DEXPECT_RC=2 "-DEXPECT_STDERR=has a partition: section; an expert-parallel layer"
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/cli/expect_rc.cmake)
