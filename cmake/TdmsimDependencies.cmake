# All third-party dependencies come from Debian packages (scripts/install-deps.sh);
# nothing is downloaded at build time.
find_package(PkgConfig REQUIRED)
find_package(yaml-cpp REQUIRED)
find_package(fmt REQUIRED)
find_package(nlohmann_json 3.10 REQUIRED)
find_package(CLI11 REQUIRED)
find_package(TBB REQUIRED)
# Open MPI (libopenmpi-dev) for sweeps over several machines; optional.
# Only the C API is used, from C++ (no MPI C++ bindings).
set(MPI_CXX_SKIP_MPICXX ON)
find_package(MPI COMPONENTS CXX)
# Google Benchmark (libbenchmark-dev) for the bench/ executables.
find_package(benchmark REQUIRED)
# SystemC 2.3.4 from libsystemc-dev ships a pkg-config file; it is linked into sim/ only.
pkg_check_modules(SYSTEMC REQUIRED IMPORTED_TARGET systemc>=2.3.3)
if(TDMSIM_BUILD_TESTS)
  find_package(Catch2 2 REQUIRED)
endif()
