# validation/tdmsimtools, the Python package every script uses to run tdmsim and read its
# outputs: its unit tests (a fake tdmsim, plus one short run of the built binary).
add_test(NAME pydata.tdmsimtools_unit
         COMMAND ${CMAKE_COMMAND} -E env TDMSIM=${TDMSIM_BIN}
                 python3 ${PROJECT_SOURCE_DIR}/validation/tdmsimtools/tests/test_tdmsimtools.py)
