# validation/tdmsimtools, the Python package every script uses to run tdmsim and read its
# outputs: its unit tests (a fake tdmsim, plus one short run of the built binary).
add_test(NAME pydata.tdmsimtools_unit
         COMMAND ${CMAKE_COMMAND} -E env TDMSIM=${TDMSIM_BIN}
                 python3 ${PROJECT_SOURCE_DIR}/validation/tdmsimtools/tests/test_tdmsimtools.py)
# validation/data/MANIFEST.md: every data file is listed with what, device, date, commit and
# command; every listed path exists; retired paths are gone from the tree and at their commit.
add_test(NAME pydata.data_manifest
         COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/cli/data_manifest_checks.py ${PROJECT_SOURCE_DIR})
