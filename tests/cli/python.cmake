# The Python module (python/, docs/api.md "Python"), in a build configured with
# -DTDMSIM_PYTHON=ON (the default): the module's checks
# (tests/python/test_module.py) and seed 000's TdmMoeLayer example.
if(TARGET tdmsim_python)
  set(tdmsim_py_env PYTHONPATH=$<TARGET_FILE_DIR:tdmsim_python>)
  add_test(NAME python.module
           COMMAND ${CMAKE_COMMAND} -E env ${tdmsim_py_env} ${TDMSIM_PYTHON_EXECUTABLE}
                   ${CMAKE_CURRENT_SOURCE_DIR}/python/test_module.py ${PROJECT_SOURCE_DIR}
                   $<TARGET_FILE:tdmsim> ${CMAKE_CURRENT_BINARY_DIR}/python-scratch)
  set_tests_properties(python.module PROPERTIES PASS_REGULAR_EXPRESSION "python module: all checks passed"
                       ENVIRONMENT TDMSIM_GPU_LIBRARY=none)
  # Weights, zero-copy arrays and DLPack, read_sweep (tests/python/test_weights_arrays.py).
  add_test(NAME python.weights_arrays_sweeps
           COMMAND ${CMAKE_COMMAND} -E env ${tdmsim_py_env} TDMSIM_GPU_LIBRARY=none ${TDMSIM_PYTHON_EXECUTABLE}
                   ${CMAKE_CURRENT_SOURCE_DIR}/python/test_weights_arrays.py ${PROJECT_SOURCE_DIR}
                   $<TARGET_FILE:tdmsim> ${CMAKE_CURRENT_BINARY_DIR}/python-arrays-scratch)
  set_tests_properties(python.weights_arrays_sweeps PROPERTIES
                       PASS_REGULAR_EXPRESSION "python weights and arrays: all checks passed")
  # torch tensors directly, when torch is importable (skipped otherwise: exit 77).
  add_test(NAME python.torch_tensors
           COMMAND ${CMAKE_COMMAND} -E env ${tdmsim_py_env} TDMSIM_GPU_LIBRARY=none ${TDMSIM_PYTHON_EXECUTABLE}
                   ${CMAKE_CURRENT_SOURCE_DIR}/python/test_torch.py ${PROJECT_SOURCE_DIR})
  set_tests_properties(python.torch_tensors PROPERTIES SKIP_RETURN_CODE 77)
  add_test(NAME python.tdm_moe_layer_example
           COMMAND ${CMAKE_COMMAND} -E env ${tdmsim_py_env} ${TDMSIM_PYTHON_EXECUTABLE}
                   ${PROJECT_SOURCE_DIR}/python/examples/tdm_moe_layer.py
                   ${PROJECT_SOURCE_DIR}/examples/c/tiny-moe.yaml)
  set_tests_properties(python.tdm_moe_layer_example PROPERTIES
                       PASS_REGULAR_EXPRESSION "agreement to 1e-4: passed" ENVIRONMENT TDMSIM_GPU_LIBRARY=none)
endif()
if(TARGET tdmsim_python)
  # The python blocks of docs/api.md run (tests/python/docs_snippets.py).
  add_test(NAME python.docs_snippets
           COMMAND ${CMAKE_COMMAND} -E env ${tdmsim_py_env} ${TDMSIM_PYTHON_EXECUTABLE}
                   ${CMAKE_CURRENT_SOURCE_DIR}/python/docs_snippets.py ${PROJECT_SOURCE_DIR})
  set_tests_properties(python.docs_snippets PROPERTIES PASS_REGULAR_EXPRESSION "python blocks ran"
                       ENVIRONMENT TDMSIM_GPU_LIBRARY=none)
  # The module as `cmake --install` puts it, imported from the prefix
  # (tests/cli/install_python.cmake).
  add_test(NAME install.python_module
           COMMAND ${CMAKE_COMMAND} -DBUILD_DIR=${PROJECT_BINARY_DIR} -DSOURCE_DIR=${PROJECT_SOURCE_DIR}
                   -DWORK_DIR=${CMAKE_CURRENT_BINARY_DIR}/install-python
                   -DPYTHON=${TDMSIM_PYTHON_EXECUTABLE} -DPYDIR=${TDMSIM_PYTHON_INSTALL_DIR}
                   -P ${CMAKE_CURRENT_SOURCE_DIR}/cli/install_python.cmake)
  set_tests_properties(install.python_module PROPERTIES PASS_REGULAR_EXPRESSION "install python: ok"
                       ENVIRONMENT TDMSIM_GPU_LIBRARY=none)
endif()
