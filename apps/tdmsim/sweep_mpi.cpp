#include "apps/tdmsim/sweep_mpi.h"

#include "apps/tdmsim/output_dir.h"  // BadInput

#include <chrono>
#include <cstdlib>
#include <limits>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>

#ifdef TDMSIM_HAVE_MPI
#include <mpi.h>
#endif

namespace tdmsim::cli {
namespace {

#ifdef TDMSIM_HAVE_MPI
// Started by mpirun/mpiexec (Open MPI, or a PMIx launcher such as srun)?
bool launched_by_mpi() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK"}) {
    if (const char* e = std::getenv(v); e != nullptr && *e != '\0') return true;
  }
  return false;
}

constexpr int kTagRequest = 1;  // worker -> rank 0: "" (first) or the last outcome as JSON
constexpr int kTagReply = 2;    // rank 0 -> worker: a point index, or -1 = no more
constexpr int kTagGatherLength = 3;  // MpiSession::gather: a message's length
constexpr int kTagGatherData = 4;    // and its bytes

// Waits for a request without spinning: blocking MPI calls busy-poll a core,
// which a machine running simulations in child processes cannot spare.
void wait_sleeping(MPI_Request& req) {
  for (int done = 0;;) {
    MPI_Test(&req, &done, MPI_STATUS_IGNORE);
    if (done) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}
#endif

}  // namespace

MpiSession::MpiSession() {
#ifdef TDMSIM_HAVE_MPI
  if (!launched_by_mpi()) return;
  int provided = 0;
  MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided);
  if (provided < MPI_THREAD_SERIALIZED) {
    MPI_Finalize();
    throw std::runtime_error("this MPI library does not support MPI_THREAD_SERIALIZED");
  }
  active_ = true;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
#else
  if (const int n = mpi_launcher_processes(); n > 1) {
    throw BadInput(
        "started by an MPI launcher with " + std::to_string(n) +
        " processes, but this tdmsim was built without MPI (no MPI library when it was "
        "configured): each process would run the whole command and write the same files; "
        "run one process, or rebuild with Open MPI installed (scripts/install-deps.sh)");
  }
#endif
}

MpiSession::~MpiSession() {
#ifdef TDMSIM_HAVE_MPI
  if (active_) MPI_Finalize();
#endif
}

int MpiSession::broadcast(int value) const {
#ifdef TDMSIM_HAVE_MPI
  if (active_) {
    MPI_Request req;
    MPI_Ibcast(&value, 1, MPI_INT, 0, MPI_COMM_WORLD, &req);
    wait_sleeping(req);
  }
#endif
  return value;
}

std::vector<std::string> MpiSession::gather(const std::string& mine) const {
  if (mine.size() > static_cast<std::size_t>(std::numeric_limits<int>::max())) {
    throw std::length_error("an MPI message over 2 GiB");  // (callers send a short error instead)
  }
  if (!active_) return {mine};
  std::vector<std::string> all;
#ifdef TDMSIM_HAVE_MPI
  // Point to point, one rank after another: each message's length fits an
  // int, whatever their sum.
  MPI_Request req;
  if (rank_ != 0) {
    int len = static_cast<int>(mine.size());
    MPI_Isend(&len, 1, MPI_INT, 0, kTagGatherLength, MPI_COMM_WORLD, &req);
    wait_sleeping(req);
    MPI_Isend(mine.data(), len, MPI_CHAR, 0, kTagGatherData, MPI_COMM_WORLD, &req);
    wait_sleeping(req);
    return all;
  }
  all.push_back(mine);
  for (int r = 1; r < size_; ++r) {
    int len = 0;
    MPI_Irecv(&len, 1, MPI_INT, r, kTagGatherLength, MPI_COMM_WORLD, &req);
    wait_sleeping(req);
    std::string text(static_cast<std::size_t>(len), '\0');
    MPI_Irecv(text.data(), len, MPI_CHAR, r, kTagGatherData, MPI_COMM_WORLD, &req);
    wait_sleeping(req);
    all.push_back(std::move(text));
  }
#endif
  return all;
}

void mpi_coordinate(const MpiSession& mpi, int jobs,
                    const std::function<std::optional<std::uint64_t>()>& next_point,
                    const std::function<PointRequest(std::uint64_t)>& request_for,
                    const std::function<void(const PointOutcome&)>& done) {
  auto local_next = [&]() -> std::optional<PointRequest> {
    if (auto i = next_point()) return request_for(*i);
    return std::nullopt;
  };
  (void)mpi;
#ifdef TDMSIM_HAVE_MPI
  // How many threads ask, over all other ranks.
  int mine = 0, remote = 0;
  MPI_Reduce(&mine, &remote, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
  std::thread local([&] {
    if (jobs > 0) run_points(jobs, local_next, done);
  });
  int stopped = 0;
  while (stopped < remote) {
    int flag = 0;
    MPI_Status st;
    MPI_Iprobe(MPI_ANY_SOURCE, kTagRequest, MPI_COMM_WORLD, &flag, &st);
    if (!flag) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      continue;
    }
    int len = 0;
    MPI_Get_count(&st, MPI_CHAR, &len);
    std::string payload(static_cast<std::size_t>(len), '\0');
    MPI_Recv(payload.data(), len, MPI_CHAR, st.MPI_SOURCE, kTagRequest, MPI_COMM_WORLD,
             MPI_STATUS_IGNORE);
    if (!payload.empty()) done(PointOutcome::from_json(config::Json::parse(payload)));
    const auto i = next_point();
    std::int64_t reply = i ? static_cast<std::int64_t>(*i) : -1;
    if (!i) ++stopped;
    MPI_Request req;
    MPI_Isend(&reply, 1, MPI_INT64_T, st.MPI_SOURCE, kTagReply, MPI_COMM_WORLD, &req);
    wait_sleeping(req);
  }
  local.join();
#else
  run_points(jobs, local_next, done);
#endif
}

void mpi_work(const MpiSession& mpi, int jobs,
              const std::function<PointRequest(std::uint64_t)>& request_for) {
  (void)mpi;
#ifdef TDMSIM_HAVE_MPI
  int mine = jobs, remote = 0;
  MPI_Reduce(&mine, &remote, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
  std::mutex mu;  // one request-reply exchange at a time (MPI_THREAD_SERIALIZED)
  // run_points calls next() and done() on the same thread in turn: done()
  // leaves the outcome for that thread's next request to carry, here, by
  // thread. Not in a function-local thread_local: that is constructed only in
  // a thread that passes its declaration, which oneTBB's worker threads never
  // do, so with -j 2 or more they used an unconstructed string and crashed.
  std::map<std::thread::id, std::string> pending;  // guarded by mu
  auto next = [&]() -> std::optional<PointRequest> {
    std::int64_t reply = -1;
    {
      std::lock_guard<std::mutex> lock(mu);
      std::string& outcome = pending[std::this_thread::get_id()];
      MPI_Request req;
      MPI_Isend(outcome.data(), static_cast<int>(outcome.size()), MPI_CHAR, 0, kTagRequest,
                MPI_COMM_WORLD, &req);
      wait_sleeping(req);
      MPI_Irecv(&reply, 1, MPI_INT64_T, 0, kTagReply, MPI_COMM_WORLD, &req);
      wait_sleeping(req);
      outcome.clear();
    }
    if (reply < 0) return std::nullopt;
    return request_for(static_cast<std::uint64_t>(reply));
  };
  auto done = [&](const PointOutcome& o) {
    std::string text = o.to_json().dump();
    std::lock_guard<std::mutex> lock(mu);
    pending[std::this_thread::get_id()] = std::move(text);
  };
  run_points(jobs, next, done);
#else
  (void)jobs;
  (void)request_for;
#endif
}

}  // namespace tdmsim::cli
