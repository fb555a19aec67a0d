# `cmake --install` into a prefix in the build tree, then the C example
# (examples/c) configured and built as a project of its own against the
# installed package, with find_package(tdmsim) and with pkg-config, and run
# on the installed workloads (tests/cli/install_example.cmake).
add_test(NAME install.c_example
         COMMAND ${CMAKE_COMMAND} -DBUILD_DIR=${PROJECT_BINARY_DIR} -DSOURCE_DIR=${PROJECT_SOURCE_DIR}
                 -DWORK_DIR=${CMAKE_CURRENT_BINARY_DIR}/install-example
                 -DC_COMPILER=${CMAKE_C_COMPILER}
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/cli/install_example.cmake)
set_tests_properties(install.c_example PROPERTIES PASS_REGULAR_EXPRESSION "install example: ok")
