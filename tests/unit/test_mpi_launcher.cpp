// mpi_launcher_processes(): how a build without MPI notices that mpirun
// started several copies of it (apps/tdmsim/sweep_mpi.h), and so refuses to
// let each of them write the same outputs.
#include <catch2/catch.hpp>
#include <stdlib.h>  // setenv, unsetenv (POSIX)

#include "apps/tdmsim/sweep_mpi.h"

namespace {
void set(const char* name, const char* value) {
  if (value == nullptr) {
    unsetenv(name);
  } else {
    setenv(name, value, 1);
  }
}
}  // namespace

TEST_CASE("mpi_launcher_processes reads the launcher's process count", "[mpi]") {
  set("OMPI_COMM_WORLD_SIZE", nullptr);
  set("PMI_SIZE", nullptr);
  CHECK(tdmsim::cli::mpi_launcher_processes() == 1);
  set("PMI_SIZE", "3");
  CHECK(tdmsim::cli::mpi_launcher_processes() == 3);
  set("OMPI_COMM_WORLD_SIZE", "4");  // Open MPI's own variable first
  CHECK(tdmsim::cli::mpi_launcher_processes() == 4);
  for (const char* bad : {"", "0", "-2", "2x", "99999999999"}) {
    set("OMPI_COMM_WORLD_SIZE", bad);
    set("PMI_SIZE", nullptr);
    INFO("OMPI_COMM_WORLD_SIZE=" << bad);
    CHECK(tdmsim::cli::mpi_launcher_processes() == 1);
  }
  set("OMPI_COMM_WORLD_SIZE", nullptr);
}
