#include "apps/tdmsim/child_process.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <exception>
#include <stdexcept>
#include <vector>

#include <fmt/core.h>

#include "sim/core/sim_error.h"

namespace tdmsim::cli {

namespace {

// Writes all of `bytes` to `fd`; false if the pipe broke.
bool write_all(int fd, const std::vector<std::uint8_t>& bytes) {
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

}  // namespace

config::Json run_in_child(const std::string& what, const std::function<config::Json()>& work) {
  int fd[2];
  if (::pipe(fd) != 0) throw std::runtime_error(fmt::format("cannot run {}: pipe: {}", what, std::strerror(errno)));
  // Whatever this process has buffered must not reach the child's copy of
  // the buffers (it leaves with _exit, so they are dropped, never doubled).
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) {
    const int err = errno;
    ::close(fd[0]);
    ::close(fd[1]);
    throw std::runtime_error(fmt::format("cannot run {}: fork: {}", what, std::strerror(err)));
  }
  if (pid == 0) {
    ::close(fd[0]);
    config::Json reply;
    try {
      reply = {{"result", work()}};
    } catch (...) {
      const sim::Failure f = sim::classify(std::current_exception());
      reply = {{"error", {{"bad_input", f.bad_input}, {"message", f.message}}}};
    }
    std::fflush(stderr);
    // _exit: the parent's atexit handlers and staged outputs are its own.
    ::_exit(write_all(fd[1], config::Json::to_cbor(reply)) ? 0 : 3);
  }
  ::close(fd[1]);
  std::vector<std::uint8_t> bytes;
  std::uint8_t buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    bytes.insert(bytes.end(), buf, buf + n);
  }
  ::close(fd[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFSIGNALED(status)) {
    throw std::runtime_error(fmt::format("internal error: the simulation of {} ended with signal {} ({})", what,
                                         WTERMSIG(status), strsignal(WTERMSIG(status))));
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || bytes.empty()) {
    throw std::runtime_error(fmt::format("internal error: the simulation of {} exited with status {} and {} bytes "
                                         "of result",
                                         what, WIFEXITED(status) ? WEXITSTATUS(status) : -1, bytes.size()));
  }
  config::Json reply = config::Json::from_cbor(bytes);
  if (reply.contains("error")) {
    const auto& e = reply["error"];
    const std::string message = e["message"].get<std::string>();
    if (e["bad_input"].get<bool>()) throw sim::NotSimulatable(message);
    throw std::runtime_error(message);
  }
  return std::move(reply["result"]);
}

}  // namespace tdmsim::cli
