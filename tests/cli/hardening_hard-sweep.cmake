# ---- tdmsim sweep hardening (issue 19; tests/cli/hardening_sweep.py): MPI
# without -j, a routing trace or tuned kernel table edited between runs, the output folder's lock,
# stale temporaries; bad sweeps refused up front (exit 2, nothing written).
set(HSWEEP_WORK ${CMAKE_CURRENT_BINARY_DIR}/hardening-sweep)
set(HSWEEP_PY ${CMAKE_CURRENT_SOURCE_DIR}/cli/hardening_sweep.py)
set(HSWEEP_DATA ${CMAKE_CURRENT_SOURCE_DIR}/data/hardening/hard-sweep)
add_test(NAME sweep.mpi_default_jobs
         COMMAND python3 ${HSWEEP_PY} ${TDMSIM_BIN} ${HSWEEP_WORK} mpi_default_jobs ${CMAKE_CURRENT_SOURCE_DIR}/data/sweeps/tiny.yaml)
set_tests_properties(sweep.mpi_default_jobs PROPERTIES SKIP_RETURN_CODE 77)
add_test(NAME sweep.resume_reruns_edited_trace
         COMMAND python3 ${HSWEEP_PY} ${TDMSIM_BIN} ${HSWEEP_WORK} trace_edit)
add_test(NAME sweep.resume_reruns_edited_kernel_config
         COMMAND python3 ${HSWEEP_PY} ${TDMSIM_BIN} ${HSWEEP_WORK} config_edit)
add_test(NAME sweep.output_folder_lock
         COMMAND python3 ${HSWEEP_PY} ${TDMSIM_BIN} ${HSWEEP_WORK} lock ${CMAKE_CURRENT_SOURCE_DIR}/data/sweeps/small.yaml)
add_test(NAME sweep.removes_stale_temporaries
         COMMAND python3 ${HSWEEP_PY} ${TDMSIM_BIN} ${HSWEEP_WORK} stale_temporaries ${CMAKE_CURRENT_SOURCE_DIR}/data/sweeps/tiny.yaml)
add_test(NAME sweep.point_that_cannot_run_exit_2
         COMMAND ${CMAKE_COMMAND} -DCMD=${TDMSIM_BIN}\;sweep\;${HSWEEP_DATA}/trace_too_short.yaml\;--output\;${HSWEEP_WORK}/short
                 -DEXPECT_RC=2 -DEXPECT_STDERR=trace_too_short.yaml:7:[0-9]+:.axes.scenario.tokens:.point.1..scenario.tokens=32.:.*mixtral-8x7b-16tok.trace:21:
                 -DMUST_NOT_EXIST=${HSWEEP_WORK}/short -P ${CMAKE_CURRENT_SOURCE_DIR}/cli/expect_rc.cmake)
add_test(NAME sweep.kernel_that_does_not_fit_exit_2
         COMMAND ${CMAKE_COMMAND} -DCMD=${TDMSIM_BIN}\;sweep\;${HSWEEP_DATA}/tile_does_not_fit.yaml\;--output\;${HSWEEP_WORK}/fit
                 -DEXPECT_RC=2 -DEXPECT_STDERR=tile_does_not_fit.yaml:8:[0-9]+:.axes.scenario.kernel.gate_up_tile:.point.1.*does.not.fit.on.a.CU.*LDS
                 -DMUST_NOT_EXIST=${HSWEEP_WORK}/fit -P ${CMAKE_CURRENT_SOURCE_DIR}/cli/expect_rc.cmake)
add_test(NAME sweep.grid_over_limit_fails_fast
         COMMAND ${CMAKE_COMMAND} -DCMD=${TDMSIM_BIN}\;sweep\;${CMAKE_CURRENT_SOURCE_DIR}/data/bad/sweeps/grid_too_many_points.yaml\;--output\;${HSWEEP_WORK}/grid
                 -DEXPECT_RC=2 -DEXPECT_STDERR=exceeds.the.limit.of.100000.points
                 -DMUST_NOT_EXIST=${HSWEEP_WORK}/grid -P ${CMAKE_CURRENT_SOURCE_DIR}/cli/expect_rc.cmake)
add_test(NAME sweep.samples_over_limit_fails_fast
         COMMAND ${CMAKE_COMMAND} -DCMD=${TDMSIM_BIN}\;sweep\;${CMAKE_CURRENT_SOURCE_DIR}/data/bad/sweeps/samples_over_limit.yaml\;--output\;${HSWEEP_WORK}/samples
                 -DEXPECT_RC=2 -DEXPECT_STDERR=samples.*100000
                 -DMUST_NOT_EXIST=${HSWEEP_WORK}/samples -P ${CMAKE_CURRENT_SOURCE_DIR}/cli/expect_rc.cmake)
