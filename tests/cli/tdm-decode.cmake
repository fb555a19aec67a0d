# ---- the descriptor-driven TDM unit (issue #21 part 1; tests/cli/tdm_decode_checks.py):
# a stream written by `run --write-descriptors` and read back with `--descriptors`
# gives a byte-identical summary.json (the scenario's layer, a 1-stage one, a split-K one); a corrupt or
# disagreeing stream exits 2 with its byte offset and writes nothing; a stream written
# inside the run's --output folder is written with it; a sweep over
# every policy, custom included, completes.
set(TDMDEC_WORK ${CMAKE_CURRENT_BINARY_DIR}/tdm-decode)
set(TDMDEC_PY ${CMAKE_CURRENT_SOURCE_DIR}/cli/tdm_decode_checks.py)
set(TDMDEC_SCENARIO ${PROJECT_SOURCE_DIR}/workloads/scenarios/qwen3-30b-a3b-decode-mi500x-tdm.yaml)
add_test(NAME tdm.descriptors_round_trip
         COMMAND python3 ${TDMDEC_PY} ${TDMSIM_BIN} ${TDMDEC_WORK}/one round_trip ${TDMDEC_SCENARIO})
add_test(NAME tdm.descriptors_round_trip_one_stage
         COMMAND python3 ${TDMDEC_PY} ${TDMSIM_BIN} ${TDMDEC_WORK}/fused round_trip ${TDMDEC_SCENARIO} stages=1)
add_test(NAME tdm.descriptors_round_trip_split_k
         COMMAND python3 ${TDMDEC_PY} ${TDMSIM_BIN} ${TDMDEC_WORK}/splitk round_trip ${TDMDEC_SCENARIO} stages=2 split_k=2)
add_test(NAME tdm.descriptors_corrupt_exit_2
         COMMAND python3 ${TDMDEC_PY} ${TDMSIM_BIN} ${TDMDEC_WORK} corrupt ${TDMDEC_SCENARIO})
add_test(NAME tdm.descriptors_disagree_exit_2
         COMMAND python3 ${TDMDEC_PY} ${TDMSIM_BIN} ${TDMDEC_WORK} disagree ${TDMDEC_SCENARIO})
add_test(NAME tdm.descriptors_written_in_output_folder
         COMMAND python3 ${TDMDEC_PY} ${TDMSIM_BIN} ${TDMDEC_WORK} in_output ${TDMDEC_SCENARIO})
add_test(NAME tdm.sweep_all_policies
         COMMAND python3 ${TDMDEC_PY} ${TDMSIM_BIN} ${TDMDEC_WORK} policies ${TDMDEC_SCENARIO})
add_test(NAME tdm.descriptors_need_tdm_path_exit_2
         COMMAND ${CMAKE_COMMAND} -DCMD=${TDMSIM_BIN}\;run\;${TDMDEC_SCENARIO}\;--path\;software\;--descriptors\;x.tdmm
                 -DEXPECT_RC=2 -DEXPECT_STDERR=--descriptors.needs.the.TDM.path -P ${CMAKE_CURRENT_SOURCE_DIR}/cli/expect_rc.cmake)
# On a machine without the unit the reason is the machine, not the path.
add_test(NAME tdm.descriptors_need_tdm_machine_exit_2
         COMMAND ${CMAKE_COMMAND} -DCMD=${TDMSIM_BIN}\;run\;${PROJECT_SOURCE_DIR}/workloads/scenarios/mixtral-8x7b-64tok-bf16-mi300x.yaml\;--write-descriptors\;${CMAKE_CURRENT_BINARY_DIR}/never.tdmm
                 "-DEXPECT_STDERR=--write-descriptors needs the TDM path, and machine mi300x .*has no tdm: section"
                 -DEXPECT_RC=2 -DMUST_NOT_EXIST=${CMAKE_CURRENT_BINARY_DIR}/never.tdmm -P ${CMAKE_CURRENT_SOURCE_DIR}/cli/expect_rc.cmake)
add_test(NAME tdm.custom_policy_runs
         COMMAND ${CMAKE_COMMAND} -DCMD=${TDMSIM_BIN}\;run\;${CMAKE_CURRENT_SOURCE_DIR}/data/tdm-decode/policy-custom.yaml\;--quiet
                 -DEXPECT_RC=0 -P ${CMAKE_CURRENT_SOURCE_DIR}/cli/expect_rc.cmake)
add_test(NAME tdm.descriptors_longest_slots_complete
         COMMAND python3 ${TDMDEC_PY} ${TDMSIM_BIN} ${TDMDEC_WORK} long_slots ${TDMDEC_SCENARIO})
# Both paths spread a small grid over every die: the host launches round robin over the
# XCDs, the TDM unit's first wave each die its share (sim/platform/dispatcher.cpp first_claims).
add_test(NAME tdm.first_wave_spread_over_dies
         COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/cli/tdm_placement_checks.py ${TDMSIM_BIN}
                 ${TDMDEC_WORK}/placement ${CMAKE_CURRENT_SOURCE_DIR}/data/tdm-placement/qwen3-1tok-mi500x-tdm.yaml)
