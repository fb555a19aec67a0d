# ---- every numeric machine and model parameter changes a result (issue #22 part 1;
# tests/cli/perturb_checks.py): each is perturbed in an overlay and a shipped scenario or
# microbenchmark run with it must change, unless its reference entry says "not modelled".
set(PERTURB_PY ${CMAKE_CURRENT_SOURCE_DIR}/cli/perturb_checks.py)
set(PERTURB_WORK ${CMAKE_CURRENT_BINARY_DIR}/perturb)
add_test(NAME perturb.every_parameter_changes_a_result
         COMMAND python3 ${PERTURB_PY} ${TDMSIM_BIN} ${PERTURB_WORK}/all)
set_tests_properties(perturb.every_parameter_changes_a_result PROPERTIES LABELS slow TIMEOUT 3600)
# The check itself: a parameter that changes nothing (layers.total, declared not modelled,
# checked all the same) fails it.
add_test(NAME perturb.fails_on_an_inert_parameter
         COMMAND ${CMAKE_COMMAND} -DCMD=python3\;${PERTURB_PY}\;${TDMSIM_BIN}\;${PERTURB_WORK}/inert\;--only\;layers.total\;--probes\;h200\;--ignore-declaration\;layers.total
                 -DEXPECT_RC=1 "-DEXPECT_STDERR=change no probe.*layers.total"
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/cli/expect_rc.cmake)
set_tests_properties(perturb.fails_on_an_inert_parameter PROPERTIES LABELS cli)
