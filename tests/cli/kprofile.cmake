# Kernel profiles (workloads/kernel-profiles/*.yaml, docs/calibration.md "Kernel
# profiles"): the CLI validates a profile file and refuses a broken one with exit
# 2, file:line and key; the provenance table in docs/calibration.md is the one
# the profiles generate.
add_test(NAME kprofile.validate_shipped_profiles
         COMMAND ${CMAKE_COMMAND} -DCMD=${TDMSIM_BIN}\;config\;validate
                 -DGLOB_DIR=${PROJECT_SOURCE_DIR}/workloads/kernel-profiles -DEXPECT_RC=0
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/cli/expect_rc.cmake)
add_test(NAME kprofile.bad_unit_exit_2
         COMMAND ${CMAKE_COMMAND} -DCMD=${TDMSIM_BIN}\;config\;validate\;${CMAKE_CURRENT_SOURCE_DIR}/data/bad/kernel-profiles/bad_unit.yaml
                 -DEXPECT_RC=2 "-DEXPECT_STDERR=bad_unit.yaml:9:[0-9]+.*clear.bytes_per_workgroup"
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/cli/expect_rc.cmake)
add_test(NAME kprofile.machine_with_unknown_profile_exit_2
         COMMAND ${CMAKE_COMMAND} -DCMD=${TDMSIM_BIN}\;config\;validate\;${CMAKE_CURRENT_SOURCE_DIR}/data/bad/machines/kernel_profile_unknown.yaml
                 -DEXPECT_RC=2 "-DEXPECT_STDERR=kernel_profile_unknown.yaml:7:17.*kernel_profile.*unknown kernel_profile 'hoppper'"
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/cli/expect_rc.cmake)
add_test(NAME docs.kernel_profile_table
         COMMAND python3 ${PROJECT_SOURCE_DIR}/scripts/kernel-profile-table.py --check)
