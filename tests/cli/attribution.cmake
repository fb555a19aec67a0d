# ---- the TDM-vs-software attribution (issue #21 part 4; tests/cli/attribution_checks.py):
# on every shipped TDM scenario, each path's causes add up to its total and the
# per-cause deltas to the difference of the totals (in whole ps), and `tdmsim plot`
# draws the waterfall; `path both` on a machine without a tdm: section runs the
# software path and says so, whether the scenario or --path says both; `--path tdm`
# there, or a scenario's own `path: tdm`, exits 2 naming the machine's file.
set(ATTR_PY ${CMAKE_CURRENT_SOURCE_DIR}/cli/attribution_checks.py)
set(ATTR_WORK ${CMAKE_CURRENT_BINARY_DIR}/attribution)
file(GLOB attribution_scenarios CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/workloads/scenarios/*mi500x-tdm*.yaml)
list(FILTER attribution_scenarios EXCLUDE REGEX "-serving-")
foreach(scenario_file ${attribution_scenarios})
  get_filename_component(scenario ${scenario_file} NAME_WE)
  add_test(NAME attribution.parts_sum_to_total.${scenario}
           COMMAND python3 ${ATTR_PY} ${TDMSIM_BIN} ${ATTR_WORK}/${scenario} sum ${scenario_file})
  set_tests_properties(attribution.parts_sum_to_total.${scenario} PROPERTIES SKIP_RETURN_CODE 77)
endforeach()
add_test(NAME attribution.path_both_without_tdm_unit
         COMMAND python3 ${ATTR_PY} ${TDMSIM_BIN} ${ATTR_WORK}/no-tdm both_no_tdm
                 ${PROJECT_SOURCE_DIR}/workloads/scenarios/deepseek-v3-decode-mi355x.yaml)
add_test(NAME attribution.plot_needs_both_paths_exit_2
         COMMAND python3 ${ATTR_PY} ${TDMSIM_BIN} ${ATTR_WORK}/plot-sw plot_needs_both
                 ${PROJECT_SOURCE_DIR}/workloads/scenarios/qwen3-30b-a3b-decode-mi500x-tdm.yaml)
# The causes follow their parameters: host launches = kernels x launch.kernel_launch
# (at 6 and 12 us), a longer tdm.slot_length (50 us) shows as slot waiting.
add_test(NAME attribution.causes_follow_parameters
         COMMAND python3 ${ATTR_PY} ${TDMSIM_BIN} ${ATTR_WORK}/responds responds
                 ${PROJECT_SOURCE_DIR}/workloads/scenarios/qwen3-30b-a3b-decode-mi500x-tdm.yaml)
