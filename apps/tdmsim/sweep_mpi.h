// A sweep over MPI ranks (`mpirun -np N tdmsim sweep ...`): rank 0 hands out
// point indices one at a time to whichever thread of whichever rank asks
// (dynamic load balancing), runs points itself too, and receives and writes
// every result. Each rank runs its points as child processes, as a
// single-process sweep does, so the results are the same. Without an MPI
// launcher in the environment the session is a single rank and nothing calls
// MPI; a build without MPI started by a launcher with several processes refuses
// to run (each process would run the whole command and write the same files).
#pragma once

#include <cstdint>
#include <cstdlib>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "apps/tdmsim/sweep_worker.h"

namespace tdmsim::cli {

// How many processes the MPI launcher that started this one started: Open
// MPI's OMPI_COMM_WORLD_SIZE, else PMI_SIZE (MPICH's Hydra, Slurm's PMI); 1
// when neither is set to a positive number.
inline int mpi_launcher_processes() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"}) {
    const char* e = std::getenv(v);
    if (e == nullptr || *e == '\0') continue;
    char* end = nullptr;
    const long n = std::strtol(e, &end, 10);
    if (*end == '\0' && n > 0 && n < (1L << 30)) return static_cast<int>(n);
  }
  return 1;
}

// The MPI session of one command (`tdmsim sweep`, and `tdmsim run` of an
// expert-parallel layer: ep_mpi.h). Its collectives wait without spinning.
class MpiSession {
 public:
  MpiSession();  // MPI_Init_thread when started by an MPI launcher
  ~MpiSession();  // MPI_Finalize
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;

  bool active() const { return active_; }
  int rank() const { return rank_; }
  int size() const { return size_; }
  // Rank 0's `value`, on every rank.
  int broadcast(int value) const;
  // Every rank's `mine` (each under 2 GiB), on rank 0 in rank order;
  // elsewhere empty. Called by every rank.
  std::vector<std::string> gather(const std::string& mine) const;

 private:
  bool active_ = false;
  int rank_ = 0;
  int size_ = 1;
};

// Rank 0: serves the other ranks' requests and runs `jobs` local threads,
// until `next_point` is exhausted and every outcome has reached `done`
// (called from several threads).
void mpi_coordinate(const MpiSession& mpi, int jobs,
                    const std::function<std::optional<std::uint64_t>()>& next_point,
                    const std::function<PointRequest(std::uint64_t)>& request_for,
                    const std::function<void(const PointOutcome&)>& done);

// Other ranks: `jobs` threads ask rank 0 for points, run them and send the
// outcomes back, until rank 0 has no more.
void mpi_work(const MpiSession& mpi, int jobs,
              const std::function<PointRequest(std::uint64_t)>& request_for);

}  // namespace tdmsim::cli
