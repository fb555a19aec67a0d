# ---- partition modes of a machine (issue 23 part 4; tests/cli/partition_checks.py):
# a workload on one compute partition, memory NPS1 or NPS4; docs/partitions.md.
foreach(mode refuse copy layer)
  add_test(NAME partition.${mode}
           COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/cli/partition_checks.py ${TDMSIM_BIN}
                   ${CMAKE_CURRENT_BINARY_DIR}/partition/${mode} ${mode} ${PROJECT_SOURCE_DIR})
endforeach()
