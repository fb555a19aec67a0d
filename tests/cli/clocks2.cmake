# Clocks under load (the machine `power:` section's governor) in the run's
# outputs (tests/cli/clocks2_checks.py): the shipped h200 has a power
# section, mi355x none.
set(CLOCKS2_WORK ${CMAKE_CURRENT_BINARY_DIR}/clocks2)
add_test(NAME clocks2.decode_above_prefill
         COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/cli/clocks2_checks.py ${TDMSIM_BIN} ${CLOCKS2_WORK}/direction
                 direction ${PROJECT_SOURCE_DIR}/workloads/machines/h200.yaml 1980)
add_test(NAME clocks2.no_power_section_peak
         COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/cli/clocks2_checks.py ${TDMSIM_BIN} ${CLOCKS2_WORK}/peak
                 peak ${PROJECT_SOURCE_DIR}/workloads/machines/mi355x.yaml 2400)
