# ---- repeated sweeps and sensitivity (issue 21 part 5; tests/cli/sweep_repeat_checks.py):
# a 4-point sweep with repeat: 3 run with -j 2 (the fixture), then -j 1, a killed-
# and-resumed run and mpirun -np 2 must give byte-identical results (sweep_checks.py);
# the draws' statistics and bands; a reduced one-at-a-time sensitivity sweep;
# an oat sweep with jitter (its rows marked in results.csv, its noise floor);
# bad repeat: values exit 2 naming file, line and key, writing nothing.
set(RSWEEP_SPEC ${CMAKE_CURRENT_SOURCE_DIR}/data/sweeps/repeat.yaml)
set(RSWEEP_WORK ${CMAKE_CURRENT_BINARY_DIR}/sweep-repeat)
set(RSWEEP_PY ${CMAKE_CURRENT_SOURCE_DIR}/cli/sweep_repeat_checks.py)
add_test(NAME sweep_repeat.reference_j2
         COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/cli/sweep_checks.py ${TDMSIM_BIN} ${RSWEEP_WORK} reference ${RSWEEP_SPEC})
set_tests_properties(sweep_repeat.reference_j2 PROPERTIES FIXTURES_SETUP sweep_repeat_ref)
foreach(mode jobs resume mpi)
  add_test(NAME sweep_repeat.${mode}
           COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/cli/sweep_checks.py ${TDMSIM_BIN} ${RSWEEP_WORK} ${mode} ${RSWEEP_SPEC})
  set_tests_properties(sweep_repeat.${mode} PROPERTIES FIXTURES_REQUIRED sweep_repeat_ref SKIP_RETURN_CODE 77)
endforeach()
foreach(mode stats bands)
  add_test(NAME sweep_repeat.${mode} COMMAND python3 ${RSWEEP_PY} ${TDMSIM_BIN} ${mode} ${RSWEEP_WORK})
  set_tests_properties(sweep_repeat.${mode} PROPERTIES FIXTURES_REQUIRED sweep_repeat_ref)
endforeach()
add_test(NAME sweep_repeat.sensitivity_reduced
         COMMAND python3 ${RSWEEP_PY} ${TDMSIM_BIN} sensitivity ${RSWEEP_WORK}
                 ${CMAKE_CURRENT_SOURCE_DIR}/data/sweeps/sensitivity-small.yaml)
add_test(NAME sweep_repeat.jitter_rows COMMAND python3 ${RSWEEP_PY} ${TDMSIM_BIN} jitter ${RSWEEP_WORK})
foreach(bad zero negative fraction huge)
  add_test(NAME sweep_repeat.bad_${bad}_exit_2
           COMMAND ${CMAKE_COMMAND} -DCMD=${TDMSIM_BIN}\;sweep\;${CMAKE_CURRENT_SOURCE_DIR}/data/bad/sweeps/repeat_${bad}.yaml\;--output\;${RSWEEP_WORK}/bad_${bad}
                   -DEXPECT_RC=2 -DEXPECT_STDERR=repeat_${bad}.yaml:8:9:.repeat:
                   -DMUST_NOT_EXIST=${RSWEEP_WORK}/bad_${bad} -P ${CMAKE_CURRENT_SOURCE_DIR}/cli/expect_rc.cmake)
endforeach()
