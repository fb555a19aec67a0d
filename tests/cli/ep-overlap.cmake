# ---- expert-parallel options (tests/cli/ep_overlap_checks.py): overlap chunked,
# combine all_gather, tensor parallel inside experts, and their refusals;
# docs/expert-parallel.md.
set(EP2_WORK ${CMAKE_CURRENT_BINARY_DIR}/ep2)
foreach(mode overlap tp)
  add_test(NAME ep.${mode}
           COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/cli/ep_overlap_checks.py ${TDMSIM_BIN} ${EP2_WORK}/${mode} ${mode}
                   ${PROJECT_SOURCE_DIR}/workloads/scenarios/qwen3-30b-decode-h200.yaml)
endforeach()
add_test(NAME ep.options_refused
         COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/cli/ep_overlap_checks.py ${TDMSIM_BIN} ${EP2_WORK}/refuse refuse
                 ${PROJECT_SOURCE_DIR}/workloads/scenarios/qwen3-30b-decode-h200.yaml)
add_test(NAME ep.gather
         COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/cli/ep_overlap_checks.py ${TDMSIM_BIN} ${EP2_WORK}/gather gather
                 ${PROJECT_SOURCE_DIR}/workloads/scenarios/qwen3-30b-a3b-decode-mi500x-tdm.yaml)
