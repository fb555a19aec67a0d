#include "apps/tdmsim/sweep_worker.h"

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <vector>

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/core.h>
#include <tbb/global_control.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

extern char** environ;

namespace tdmsim::cli {
namespace {

using config::Json;

// The tail of a child's stderr worth quoting in an error.
std::string tail(const std::string& s, std::size_t n = 2000) {
  std::string t = s.size() > n ? "..." + s.substr(s.size() - n) : s;
  while (!t.empty() && (t.back() == '\n' || t.back() == ' ')) t.pop_back();
  return t;
}

struct Pipe {
  int fd[2] = {-1, -1};
  Pipe() {
    if (::pipe2(fd, O_CLOEXEC) != 0) throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  }
  ~Pipe() {
    close_end(0);
    close_end(1);
  }
  void close_end(int i) {
    if (fd[i] >= 0) ::close(fd[i]);
    fd[i] = -1;
  }
};

}  // namespace

Json PointOutcome::to_json() const {
  return {{"point", point}, {"draw", draw}, {"ok", ok}, {"result", result}, {"error", error}, {"wall_s", wall_s}};
}

PointOutcome PointOutcome::from_json(const Json& j) {
  PointOutcome o;
  o.point = j.at("point").get<std::uint64_t>();
  o.draw = j.value("draw", 0u);
  o.ok = j.at("ok").get<bool>();
  o.result = j.at("result");
  o.error = j.at("error").get<std::string>();
  o.wall_s = j.at("wall_s").get<double>();
  return o;
}

std::string self_executable() {
  // Not the path it points to: /proc/self/exe, resolved in the child as it
  // starts, is this very executable even if a rebuild replaces the file
  // during a long sweep, so every point runs the same code.
  if (!std::filesystem::exists("/proc/self/exe")) {
    throw std::runtime_error("cannot find this executable: /proc/self/exe is missing");
  }
  return "/proc/self/exe";
}

PointOutcome run_point_process(const std::string& exe, const PointRequest& request) {
  const auto t0 = std::chrono::steady_clock::now();
  PointOutcome out;
  out.point = request.point;
  out.draw = request.draw;
  const std::string input = Json{{"sweep", request.sweep_file},
                                 {"point", request.point},
                                 {"draw", request.draw},
                                 {"choice", request.choice},
                                 {"parent", static_cast<std::int64_t>(::getpid())}}
                                .dump() + "\n";
  Pipe in, so, se;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, in.fd[0], 0);
  posix_spawn_file_actions_adddup2(&fa, so.fd[1], 1);
  posix_spawn_file_actions_adddup2(&fa, se.fd[1], 2);
  // The sweep ignores SIGPIPE (a dying child must not kill it); the child
  // gets the default back.
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t deflt;
  sigemptyset(&deflt);
  sigaddset(&deflt, SIGPIPE);
  posix_spawnattr_setsigdefault(&attr, &deflt);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF);
  std::vector<std::string> args = {exe, "sweep-point"};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = -1;
  const int rc = ::posix_spawn(&pid, exe.c_str(), &fa, &attr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  in.close_end(0);
  so.close_end(1);
  se.close_end(1);
  if (rc != 0) {
    out.error = fmt::format("cannot start {}: {}", exe, std::strerror(rc));
    return out;
  }
  // Feed stdin and drain stdout and stderr together, so that neither side
  // blocks on a full pipe.
  std::string stdout_text, stderr_text;
  std::size_t written = 0;
  char buf[65536];
  while (so.fd[0] >= 0 || se.fd[0] >= 0) {
    std::vector<pollfd> fds;
    if (in.fd[1] >= 0) fds.push_back({in.fd[1], POLLOUT, 0});
    if (so.fd[0] >= 0) fds.push_back({so.fd[0], POLLIN, 0});
    if (se.fd[0] >= 0) fds.push_back({se.fd[0], POLLIN, 0});
    if (::poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (const auto& p : fds) {
      if (p.revents == 0) continue;
      if (p.fd == in.fd[1]) {
        const ssize_t n = ::write(in.fd[1], input.data() + written, input.size() - written);
        if (n > 0) written += static_cast<std::size_t>(n);
        if (n < 0 && errno != EINTR && errno != EAGAIN) written = input.size();  // child gone
        if (written == input.size()) in.close_end(1);
        continue;
      }
      Pipe& src = p.fd == so.fd[0] ? so : se;
      const ssize_t n = ::read(p.fd, buf, sizeof buf);
      if (n > 0) (p.fd == so.fd[0] ? stdout_text : stderr_text).append(buf, static_cast<std::size_t>(n));
      else if (n == 0 || (errno != EINTR && errno != EAGAIN)) src.close_end(0);
    }
  }
  in.close_end(1);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  out.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (WIFSIGNALED(status)) {
    out.error = fmt::format("point process killed by signal {} ({}){}", WTERMSIG(status),
                            strsignal(WTERMSIG(status)),
                            stderr_text.empty() ? "" : ": " + tail(stderr_text));
    return out;
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    out.error = fmt::format("point process exited with {}: {}", WEXITSTATUS(status),
                            stderr_text.empty() ? "(no message)" : tail(stderr_text));
    return out;
  }
  Json result = Json::parse(stdout_text, nullptr, false);
  if (result.is_discarded() || !result.is_object() || !result.contains("paths")) {
    out.error = "point process wrote no result: " + tail(stdout_text + stderr_text);
    return out;
  }
  out.ok = true;
  out.result = std::move(result);
  return out;
}

void run_points(int jobs, const std::function<std::optional<PointRequest>()>& next,
                const std::function<void(const PointOutcome&)>& done) {
  const std::string exe = self_executable();
  // The threads mostly wait for their children, so -j may exceed the cores.
  tbb::global_control threads(tbb::global_control::max_allowed_parallelism,
                              static_cast<std::size_t>(jobs));
  tbb::task_arena arena(jobs);
  arena.execute([&] {
    tbb::parallel_for(0, jobs, [&](int) {
      while (auto request = next()) done(run_point_process(exe, *request));
    });
  });
}

}  // namespace tdmsim::cli
