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

// Strings of at least this many bytes cross beside the CBOR, as they are:
// nlohmann's CBOR reader takes a string byte by byte (a run's stats text,
// about 0.7 MB, cost more to read back than to write).
constexpr std::size_t kRawString = 1024;

// Moves every string of `j` of at least kRawString bytes into `raw`, leaving
// in its place an empty binary whose subtype is its index there (nothing
// else in a reply is a binary with a subtype).
void take_raw_strings(config::Json& j, std::vector<std::string>& raw) {
  if (j.is_string() && j.get_ref<const std::string&>().size() >= kRawString) {
    const auto index = static_cast<std::uint64_t>(raw.size());
    raw.push_back(std::move(j.get_ref<std::string&>()));
    j = config::Json::binary({}, index);
  } else if (j.is_structured()) {
    for (auto& v : j) take_raw_strings(v, raw);
  }
}

// The reverse: each binary with a subtype becomes the raw string it names.
void put_raw_strings(config::Json& j, std::vector<std::string>& raw) {
  if (j.is_binary() && j.get_binary().has_subtype()) {
    const auto index = static_cast<std::size_t>(j.get_binary().subtype());
    if (index >= raw.size()) throw std::runtime_error("internal error: a child's reply names a missing string");
    j = std::move(raw[index]);
  } else if (j.is_structured()) {
    for (auto& v : j) put_raw_strings(v, raw);
  }
}

void append_u64(std::vector<std::uint8_t>& out, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
}

std::uint64_t read_u64(const std::vector<std::uint8_t>& in, std::size_t& at) {
  if (in.size() - at < 8) throw std::runtime_error("internal error: a child's reply is cut short");
  std::uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= static_cast<std::uint64_t>(in[at + i]) << (8 * i);
  at += 8;
  return v;
}

// A reply as it crosses the pipe: the CBOR's length and the CBOR, then each
// raw string's length and bytes.
std::vector<std::uint8_t> encode_reply(config::Json reply) {
  std::vector<std::string> raw;
  take_raw_strings(reply, raw);
  const std::vector<std::uint8_t> cbor = config::Json::to_cbor(reply);
  std::size_t size = 8 + cbor.size();
  for (const auto& r : raw) size += 8 + r.size();
  std::vector<std::uint8_t> out;
  out.reserve(size);
  append_u64(out, cbor.size());
  out.insert(out.end(), cbor.begin(), cbor.end());
  for (const auto& r : raw) {
    append_u64(out, r.size());
    out.insert(out.end(), r.begin(), r.end());
  }
  return out;
}

config::Json decode_reply(const std::vector<std::uint8_t>& bytes) {
  std::size_t at = 0;
  const std::uint64_t cbor_size = read_u64(bytes, at);
  if (bytes.size() - at < cbor_size) throw std::runtime_error("internal error: a child's reply is cut short");
  const auto cbor_begin = bytes.begin() + static_cast<std::ptrdiff_t>(at);
  // (Tags kept: they carry the raw strings' indices as binary subtypes.)
  config::Json reply = config::Json::from_cbor(cbor_begin, cbor_begin + static_cast<std::ptrdiff_t>(cbor_size), true,
                                               true, nlohmann::json::cbor_tag_handler_t::store);
  at += cbor_size;
  std::vector<std::string> raw;
  while (at < bytes.size()) {
    const std::uint64_t n = read_u64(bytes, at);
    if (bytes.size() - at < n) throw std::runtime_error("internal error: a child's reply is cut short");
    raw.emplace_back(reinterpret_cast<const char*>(bytes.data() + at), n);
    at += n;
  }
  put_raw_strings(reply, raw);
  return reply;
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
    ::_exit(write_all(fd[1], encode_reply(std::move(reply))) ? 0 : 3);
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
  config::Json reply = decode_reply(bytes);
  if (reply.contains("error")) {
    const auto& e = reply["error"];
    const std::string message = e["message"].get<std::string>();
    if (e["bad_input"].get<bool>()) throw sim::NotSimulatable(message);
    throw std::runtime_error(message);
  }
  return std::move(reply["result"]);
}

}  // namespace tdmsim::cli
