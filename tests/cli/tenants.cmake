# ---- tenants on the partitions of one GPU (issue 23 part 4; tests/cli/tenants_checks.py):
# each tenant alone and together (shared HBM and MALL), the interference figure;
# docs/partitions.md "Tenants".
foreach(mode example single tdm same nps4 fabric refuse)
  add_test(NAME tenants.${mode}
           COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/cli/tenants_checks.py ${TDMSIM_BIN}
                   ${CMAKE_CURRENT_BINARY_DIR}/tenants/${mode} ${mode} ${PROJECT_SOURCE_DIR})
endforeach()
add_test(NAME tenants.path_tdm_named_at_its_line
         COMMAND ${CMAKE_COMMAND} -DCMD=${TDMSIM_BIN}\;run\;${CMAKE_CURRENT_SOURCE_DIR}/data/validate/tenants-path-tdm.yaml
                 -DEXPECT_RC=2 "-DEXPECT_STDERR=tenants-path-tdm.yaml:6:7: path: tdm: machine mi300x-dpx"
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/cli/expect_rc.cmake)
