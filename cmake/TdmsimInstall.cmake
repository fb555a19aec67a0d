# `cmake --install`: the tdmsim CLI, the C API library and headers, the CMake
# package (find_package(tdmsim) -> tdmsim::tdmsim), tdmsim.pc, the shipped
# workloads and the C example (docs/api.md, "Installing").
include(CMakePackageConfigHelpers)
# The CLI as built: its only RUNPATH entry is the system's Open MPI folder
# (install(TARGETS) would try to rewrite it and trips on the empty entry the
# MPI link flags leave).
install(PROGRAMS $<TARGET_FILE:tdmsim> DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS tdmsim_capi ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
# The gpu backend library, when this build makes one (-DTDMSIM_GPU_BACKEND=nvidia|amd):
# beside the archive, found through the loader's path (or $TDMSIM_GPU_LIBRARY).
if(TDMSIM_GPU_BACKEND_LIBRARY)
  install(PROGRAMS ${TDMSIM_GPU_BACKEND_LIBRARY} DESTINATION ${CMAKE_INSTALL_LIBDIR})
endif()
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/tdmsim DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/workloads/
        DESTINATION ${CMAKE_INSTALL_DATADIR}/tdmsim/workloads
        FILES_MATCHING PATTERN "*.yaml" PATTERN "*.trace" PATTERN "*.csv"
        PATTERN "config" EXCLUDE PATTERN "specs" EXCLUDE PATTERN "util" EXCLUDE)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/examples/c DESTINATION ${CMAKE_INSTALL_DATADIR}/tdmsim/examples)

set(tdmsim_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/tdmsim)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/tdmsimConfig.cmake.in
  ${PROJECT_BINARY_DIR}/tdmsimConfig.cmake INSTALL_DESTINATION ${tdmsim_cmake_dir}
  PATH_VARS CMAKE_INSTALL_LIBDIR CMAKE_INSTALL_INCLUDEDIR CMAKE_INSTALL_DATADIR CMAKE_INSTALL_BINDIR)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/tdmsimConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/tdmsimConfig.cmake ${PROJECT_BINARY_DIR}/tdmsimConfigVersion.cmake
        DESTINATION ${tdmsim_cmake_dir})

file(RELATIVE_PATH TDMSIM_PC_TO_PREFIX /prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig /prefix)
configure_file(${PROJECT_SOURCE_DIR}/cmake/tdmsim.pc.in ${PROJECT_BINARY_DIR}/tdmsim.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/tdmsim.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
