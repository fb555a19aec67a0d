# ---- request streams (issue 23 part 4; tests/cli/serving_checks.py): arrivals,
# batching and per-request latency on both paths, every batch's layer simulated
# with its own routing draw; docs/serving.md.
set(SERVING_WORK ${CMAKE_CURRENT_BINARY_DIR}/serving)
set(SERVING_SCENARIO ${PROJECT_SOURCE_DIR}/workloads/scenarios/qwen3-30b-a3b-decode-mi500x-tdm.yaml)
foreach(mode stream same draws trace refuse)
  add_test(NAME serving.${mode}
           COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/cli/serving_checks.py ${TDMSIM_BIN} ${SERVING_WORK}/${mode} ${mode}
                   ${SERVING_SCENARIO})
endforeach()
