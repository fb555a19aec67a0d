# ---- tenants on the partitions of one GPU (issue 23 part 4; tests/cli/tenants_checks.py):
# each tenant alone and together (shared HBM and MALL), the interference figure;
# docs/partitions.md "Tenants".
foreach(mode example single tdm same nps4 fabric refuse)
  add_test(NAME tenants.${mode}
           COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/cli/tenants_checks.py ${TDMSIM_BIN}
                   ${CMAKE_CURRENT_BINARY_DIR}/tenants/${mode} ${mode} ${PROJECT_SOURCE_DIR})
endforeach()
