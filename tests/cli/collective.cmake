# ---- tdmsim collective (issue 23 part 2; tests/cli/collective_checks.py): the
# analytical all-to-all / all-gather model from the command line: closed forms on
# the shipped machines' interconnect YAML, a non-uniform traffic matrix, the
# output folder, --quiet, and bad input exiting 2 with a clear message, writing nothing.
set(COLL_WORK ${CMAKE_CURRENT_BINARY_DIR}/collective)
# end_to_end empties its own folder at start: a folder no other test writes.
file(MAKE_DIRECTORY ${COLL_WORK})
add_test(NAME collective.end_to_end
         COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/cli/collective_checks.py ${TDMSIM_BIN} ${COLL_WORK}/end_to_end
                 ${PROJECT_SOURCE_DIR}/workloads/machines)
add_test(NAME collective.help
         COMMAND ${CMAKE_COMMAND} -DCMD=${TDMSIM_BIN}\;collective\;--help -DEXPECT_RC=0
                 -DEXPECT_STDOUT=--message-bytes -P ${CMAKE_CURRENT_SOURCE_DIR}/cli/expect_rc.cmake)
add_test(NAME collective.too_many_gpus_per_node_exit_2
         COMMAND ${CMAKE_COMMAND} -DCMD=${TDMSIM_BIN}\;collective\;--machine\;mi300x\;--op\;all_to_all\;--bytes\;1MiB\;--gpus\;16\;--output\;${COLL_WORK}/too_many
                 -DEXPECT_RC=2 "-DEXPECT_STDERR=16 GPUs per node exceed the machine's interconnect.gpus_per_node .8."
                 -DMUST_NOT_EXIST=${COLL_WORK}/too_many -P ${CMAKE_CURRENT_SOURCE_DIR}/cli/expect_rc.cmake)
# docs/validation.md "Collectives" is what validation/collectives.py computes now.
add_test(NAME validation.collectives_table
         COMMAND python3 ${PROJECT_SOURCE_DIR}/validation/collectives.py --tdmsim ${TDMSIM_BIN} --check)
