// SystemC elaborates once per process: a test case that compares several
// machines simulates each in a child process forked before this process
// elaborates anything, and the child sends back its (trivially copyable)
// figures through a pipe.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <exception>
#include <type_traits>

#include <catch2/catch.hpp>

namespace tdmsim::test {

template <class T, class F>
T in_child(F f) {
  static_assert(std::is_trivially_copyable_v<T>, "the result crosses a pipe as bytes");
  int fd[2];
  REQUIRE(::pipe(fd) == 0);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::close(fd[0]);
    int rc = 0;
    T r{};
    try {
      r = f();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "run failed: %s\n", e.what());
      rc = 3;
    }
    const bool sent = ::write(fd[1], &r, sizeof r) == static_cast<ssize_t>(sizeof r);
    ::_exit(sent ? rc : 4);
  }
  ::close(fd[1]);
  T r{};
  const ssize_t got = ::read(fd[0], &r, sizeof r);
  ::close(fd[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);
  REQUIRE(got == static_cast<ssize_t>(sizeof r));
  return r;
}

}  // namespace tdmsim::test
