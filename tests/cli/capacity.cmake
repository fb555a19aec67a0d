# ---- expert capacity (issue 21 part 6; tests/cli/capacity_checks.py): tdmsim run
# reports what routing.capacity_factor dropped in summary.json and the text summary,
# consistent with the layout; capacity_factor and overflow are sweep axes with their
# own results.csv columns; bad values exit 2 naming file, line and key, writing nothing.
set(CAP_DATA ${CMAKE_CURRENT_SOURCE_DIR}/data/capacity)
set(CAP_WORK ${CMAKE_CURRENT_BINARY_DIR}/capacity)
file(MAKE_DIRECTORY ${CAP_WORK})
add_test(NAME capacity.run_reports_drops
         COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/cli/capacity_checks.py ${TDMSIM_BIN} run ${CAP_WORK}/run ${CAP_DATA}/drop.yaml)
add_test(NAME capacity.sweep_axes_and_columns
         COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/cli/capacity_checks.py ${TDMSIM_BIN} sweep ${CAP_WORK}/sweep ${CAP_DATA}/sweep.yaml)
foreach(case zero:12:20 negative:11:20 nan:11:20)
  string(REPLACE ":" ";" parts ${case})
  list(GET parts 0 bad)
  list(GET parts 1 line)
  list(GET parts 2 col)
  add_test(NAME capacity.run_factor_${bad}_exit_2
           COMMAND ${CMAKE_COMMAND} -DCMD=${TDMSIM_BIN}\;run\;${CMAKE_CURRENT_SOURCE_DIR}/data/bad/scenarios/capacity_factor_${bad}.yaml\;--output\;${CAP_WORK}/bad_${bad}
                   -DEXPECT_RC=2 -DEXPECT_STDERR=capacity_factor_${bad}.yaml:${line}:${col}:.routing.capacity_factor
                   -DMUST_NOT_EXIST=${CAP_WORK}/bad_${bad} -P ${CMAKE_CURRENT_SOURCE_DIR}/cli/expect_rc.cmake)
endforeach()
add_test(NAME capacity.validate_overflow_unknown_exit_2
         COMMAND ${CMAKE_COMMAND} -DCMD=${TDMSIM_BIN}\;config\;validate\;${CMAKE_CURRENT_SOURCE_DIR}/data/bad/scenarios/capacity_overflow_unknown.yaml
                 -DEXPECT_RC=2 -DEXPECT_STDERR=capacity_overflow_unknown.yaml:12:13:.routing.overflow:.*drop.*reroute
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/cli/expect_rc.cmake)
add_test(NAME capacity.sweep_bad_factor_axis_exit_2
         COMMAND ${CMAKE_COMMAND} -DCMD=${TDMSIM_BIN}\;sweep\;${CAP_DATA}/bad-axis.yaml\;--output\;${CAP_WORK}/bad_axis
                 -DEXPECT_RC=2 -DEXPECT_STDERR=bad-axis.yaml:9:.*routing.capacity_factor
                 -DMUST_NOT_EXIST=${CAP_WORK}/bad_axis -P ${CMAKE_CURRENT_SOURCE_DIR}/cli/expect_rc.cmake)
