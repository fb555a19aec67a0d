# The Python module (python/, docs/api.md "Python"), in a build configured with
# -DTDMSIM_PYTHON=ON (the default): the module's checks
# (tests/python/test_module.py) and seed 000's TdmMoeLayer example.
if(TARGET tdmsim_python)
  set(tdmsim_py_env PYTHONPATH=$<TARGET_FILE_DIR:tdmsim_python>)
  add_test(NAME python.module
           COMMAND ${CMAKE_COMMAND} -E env ${tdmsim_py_env} ${TDMSIM_PYTHON_EXECUTABLE}
                   ${CMAKE_CURRENT_SOURCE_DIR}/python/test_module.py ${PROJECT_SOURCE_DIR}
                   $<TARGET_FILE:tdmsim> ${CMAKE_CURRENT_BINARY_DIR}/python-scratch)
  set_tests_properties(python.module PROPERTIES PASS_REGULAR_EXPRESSION "python module: all checks passed")
  add_test(NAME python.tdm_moe_layer_example
           COMMAND ${CMAKE_COMMAND} -E env ${tdmsim_py_env} ${TDMSIM_PYTHON_EXECUTABLE}
                   ${PROJECT_SOURCE_DIR}/python/examples/tdm_moe_layer.py
                   ${PROJECT_SOURCE_DIR}/examples/c/tiny-moe.yaml)
  set_tests_properties(python.tdm_moe_layer_example PROPERTIES
                       PASS_REGULAR_EXPRESSION "agreement to 1e-4: passed")
endif()
if(TARGET tdmsim_python)
  # The python blocks of docs/api.md run (tests/python/docs_snippets.py).
  add_test(NAME python.docs_snippets
           COMMAND ${CMAKE_COMMAND} -E env ${tdmsim_py_env} ${TDMSIM_PYTHON_EXECUTABLE}
                   ${CMAKE_CURRENT_SOURCE_DIR}/python/docs_snippets.py ${PROJECT_SOURCE_DIR})
  set_tests_properties(python.docs_snippets PROPERTIES PASS_REGULAR_EXPRESSION "python blocks ran")
endif()
