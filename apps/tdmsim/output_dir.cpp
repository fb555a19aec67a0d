#include "apps/tdmsim/output_dir.h"

#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <iterator>
#include <new>
#include <system_error>
#include <vector>

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include "sim/core/sim_error.h"
#include "workloads/util/atomic_write.h"

namespace tdmsim::cli {
namespace {

// ---- Removing the staging folder on SIGINT, SIGTERM and SIGHUP ----------
//
// A signal handler can reach only static storage and may call only
// async-signal-safe functions (no allocation, no std::filesystem). So each
// staging folder in progress is copied, before the folder is created, into a
// slot of a small preallocated table of fixed-size path buffers; the handler
// removes the folders of the busy slots with openat/getdents64/unlinkat and
// calls _exit(128 + signal). These slots, the pending signal and the saved
// dispositions are the CLI's only mutable globals: a signal is a process-wide
// event and its handler has no other way to find the folder. Slots are taken
// and released by the thread that creates StagedDir objects (the main thread);
// the handler may run on any thread, hence the lock-free atomics.
constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP};
constexpr int kSlots = 4;
constexpr int kFree = 0, kStaging = 1, kCommitting = 2;
struct Slot {
  std::atomic<int> state{kFree};
  char path[4096] = {};
};
static_assert(std::atomic<int>::is_always_lock_free);
Slot g_slots[kSlots];
// A signal that arrived while a commit was renaming: the commit finishes (the
// folder is then whole) and exits with it, rather than leave the target moved
// aside and the new folder not yet in place.
std::atomic<int> g_pending_signal{0};
struct sigaction g_previous[std::size(kSignals)];
bool g_installed[std::size(kSignals)] = {};
int g_busy = 0;  // slots in use; main thread only

// Removes a file or a folder tree (up to 8 levels; staging folders are flat)
// with async-signal-safe calls only.
void remove_tree(int parent, const char* name, int depth) {
  if (::unlinkat(parent, name, 0) == 0 || errno == ENOENT) return;
  const int fd = ::openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return;
  alignas(8) char buf[2048];
  // Removing entries while reading the folder may skip some, so read it again
  // from the start until a pass finds nothing left.
  for (int pass = 0; pass < 64; ++pass) {
    if (::lseek(fd, 0, SEEK_SET) < 0) break;
    bool found = false;
    for (;;) {
      const ssize_t n = ::getdents64(fd, buf, sizeof buf);
      if (n <= 0) break;
      for (ssize_t off = 0; off < n;) {
        const auto* d = reinterpret_cast<const struct dirent64*>(buf + off);
        off += d->d_reclen;
        const char* s = d->d_name;
        if (s[0] == '.' && (s[1] == '\0' || (s[1] == '.' && s[2] == '\0'))) continue;
        found = true;
        if (depth < 8) remove_tree(fd, s, depth + 1);
      }
    }
    if (!found) break;
  }
  ::close(fd);
  ::unlinkat(parent, name, AT_REMOVEDIR);
}

extern "C" void on_cleanup_signal(int sig) {
  bool committing = false;
  for (Slot& s : g_slots) {
    const int state = s.state.load();
    if (state == kStaging) remove_tree(AT_FDCWD, s.path, 0);
    committing = committing || state == kCommitting;
  }
  if (committing) {
    g_pending_signal.store(sig);
    return;
  }
  ::_exit(128 + sig);
}

// Takes over a signal only where it still has its default action: an ignored
// signal (nohup) stays ignored and a handler someone else installed stays.
void install_handlers() {
  for (std::size_t i = 0; i < std::size(kSignals); ++i) {
    if (::sigaction(kSignals[i], nullptr, &g_previous[i]) != 0) continue;
    if ((g_previous[i].sa_flags & SA_SIGINFO) != 0 || g_previous[i].sa_handler != SIG_DFL) continue;
    struct sigaction sa = {};
    sa.sa_handler = on_cleanup_signal;
    ::sigemptyset(&sa.sa_mask);
    for (const int s : kSignals) ::sigaddset(&sa.sa_mask, s);
    g_installed[i] = ::sigaction(kSignals[i], &sa, nullptr) == 0;
  }
}

void restore_handlers() {
  for (std::size_t i = 0; i < std::size(kSignals); ++i) {
    if (g_installed[i]) ::sigaction(kSignals[i], &g_previous[i], nullptr);
    g_installed[i] = false;
  }
}

// -1 when the table is full or the path too long: the folder is then cleaned
// up only by the next run's stale-sibling removal.
int take_slot(const fs::path& staging) {
  const std::string p = fs::absolute(staging).string();
  for (int i = 0; i < kSlots; ++i) {
    Slot& s = g_slots[i];
    if (s.state.load() != kFree || p.size() >= sizeof s.path) continue;
    std::memcpy(s.path, p.c_str(), p.size() + 1);
    if (g_busy++ == 0) install_handlers();
    s.state.store(kStaging);
    return i;
  }
  return -1;
}

void release_slot(int& slot) {
  if (slot < 0) return;
  g_slots[slot].state.store(kFree);
  slot = -1;
  if (--g_busy == 0) restore_handlers();
}

void set_state(int slot, int state) {
  if (slot >= 0) g_slots[slot].state.store(state);
}

[[noreturn]] void exit_for_pending_signal(const fs::path& remove) {
  std::error_code ec;
  if (!remove.empty()) fs::remove_all(remove, ec);
  ::_exit(128 + g_pending_signal.load());
}

// ---- Output paths ---------------------------------------------------------

// A problem with the output location is the user's to fix (exit 2); running
// out of space or quota, or an I/O error, is a runtime failure (exit 1).
[[noreturn]] void throw_output_error(const std::string& what, const std::error_code& ec, bool add_reason = true) {
  const std::string msg = add_reason ? what + ": " + ec.message() : what;
  if (ec == std::errc::no_space_on_device || ec == std::errc::io_error || ec.value() == EDQUOT) {
    throw std::runtime_error(msg);
  }
  throw BadInput(msg);
}

// `folder` (which exists, or is the nearest existing one above the output
// folder `named`) is a folder this process may write in.
void require_writable_folder(const fs::path& folder, const fs::path& named) {
  std::error_code ec;
  if (!fs::is_directory(folder, ec)) {
    throw BadInput("cannot use output folder " + named.string() + ": " +
                   (folder == named ? std::string("not a folder") : folder.string() + " is not a folder"));
  }
  if (::access(folder.c_str(), W_OK | X_OK) != 0) {
    throw_output_error("cannot write in folder " + folder.string(), std::error_code(errno, std::generic_category()));
  }
}

// That a file can really be created in `folder` (which exists): root passes
// access(W_OK) on /proc, /sys and read-only mounts, where the create then
// fails, and a command should say so before its work, not after it. The probe
// is a hidden file of this process, removed at once.
void probe_create(const fs::path& folder, const fs::path& named) {
  const fs::path probe = folder / (".tdmsim-probe." + std::to_string(::getpid()));
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    if (errno == EEXIST) return;  // a leftover of a killed process of this pid: the folder takes files
    const int err = errno;
    throw_output_error("cannot write in folder " + (folder == named ? folder : named).string(),
                       std::error_code(err, std::generic_category()));
  }
  ::close(fd);
  ::unlink(probe.c_str());
}

// Removes folders prepare_parent made (innermost first), each only if it is
// still an empty folder (never a symlink put in its place).
void remove_made(const std::vector<fs::path>& made) {
  std::error_code ec;
  for (const auto& d : made) {
    if (!fs::is_directory(fs::symlink_status(d, ec)) || !fs::remove(d, ec)) break;  // keep it and those above
  }
}

// Creates the folder an output goes into and checks it can be written: makes
// `parent` and the folders above it that are missing; returns those it
// made, innermost first, so that a command that then fails (bad input found
// later, a failed write) can remove them again and leave nothing behind.
std::vector<fs::path> prepare_parent(const fs::path& parent) {
  std::error_code ec;
  std::vector<fs::path> made;
  // (Only names that are absent: a dangling symlink is there, and is the
  // user's, however create_directories then fails on it.)
  for (fs::path p = fs::absolute(parent, ec).lexically_normal();
       !p.empty() && fs::symlink_status(p, ec).type() == fs::file_type::not_found; p = p.parent_path()) {
    made.push_back(p);
    if (p == p.parent_path()) break;
  }
  fs::create_directories(parent, ec);
  if (ec) {
    remove_made(made);
    throw_output_error("cannot create output folder " + parent.string(), ec);
  }
  try {
    require_writable_folder(parent, parent);
  } catch (...) {
    remove_made(made);
    throw;
  }
  return made;
}

fs::path parent_of(const fs::path& p) { return p.has_parent_path() ? p.parent_path() : fs::path("."); }

bool is_plain_name(const fs::path& p) {
  const fs::path name = p.filename();
  return !name.empty() && name != "." && name != "..";
}

// Every regular file under `dir`, then `dir` itself, to disk.
void sync_tree(const fs::path& dir) {
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->is_regular_file(ec)) util::fsync_path(it->path());
  }
  if (ec) throw_output_error("cannot read back " + dir.string(), ec);
  util::fsync_path(dir);
}

}  // namespace

void remove_stale_siblings(const fs::path& target, const std::string& marker) {
  const std::string prefix = util::temporary_stem(target) + marker;
  std::vector<fs::path> stale;
  std::error_code ec;
  for (fs::directory_iterator it(parent_of(target), ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) continue;
    std::size_t end_pid = prefix.size();
    while (end_pid < name.size() && std::isdigit(static_cast<unsigned char>(name[end_pid]))) ++end_pid;
    const std::size_t digits = end_pid - prefix.size();
    const std::string rest = name.substr(end_pid);
    if (digits == 0 || digits > 9 || (!rest.empty() && rest != ".old")) continue;
    const pid_t pid = static_cast<pid_t>(std::stol(name.substr(prefix.size(), digits)));
    if (pid <= 0 || pid == ::getpid()) continue;
    // ESRCH: no such process. EPERM means alive (another user's): leave it.
    if (::kill(pid, 0) == 0 || errno != ESRCH) continue;
    stale.push_back(it->path());
  }
  for (const auto& p : stale) fs::remove_all(p, ec);
}

StagedDir::StagedDir(fs::path target, bool force, const std::vector<fs::path>& inputs) : target_(std::move(target)) {
  if (target_.filename().empty()) target_ = target_.parent_path();
  if (!is_plain_name(target_)) {
    throw BadInput("output folder '" + target_.string() + "': give a folder name");
  }
  if (target_.filename().string().size() > util::kMaxNameBytes) {
    throw BadInput("output folder '" + target_.string() + "': its name is longer than " +
                   std::to_string(util::kMaxNameBytes) + " bytes");
  }
  std::error_code ec;
  const fs::file_status st = fs::status(target_, ec);
  // A symlink to nothing: the folder could not be renamed into its place at
  // the end (after all the work), so it is refused now.
  if (!fs::exists(st) && fs::is_symlink(fs::symlink_status(target_, ec))) {
    throw BadInput("output folder " + target_.string() +
                   " is a symbolic link to nothing: remove it or choose another folder");
  }
  if (fs::exists(st)) {
    if (!force) {
      throw BadInput("output folder " + target_.string() +
                     " already exists (use --force to replace it)");
    }
    if (!fs::is_directory(st)) {
      throw BadInput("output folder " + target_.string() +
                     " exists and is not a folder (--force replaces only a folder)");
    }
    // --force removes the old folder whole: only one a tdmsim command wrote
    // (its marker file) or an empty one, never a folder of the user's own,
    // such as the one holding this command's input files.
    if (!fs::exists(target_ / kOutputMarker, ec) && !fs::is_empty(target_, ec)) {
      throw BadInput("output folder " + target_.string() + " exists without " + std::string(kOutputMarker) +
                     ", the file every output folder of a tdmsim command has (since 2026-12-07: older ones lack it "
                     "too); --force replaces only such a folder, or an empty one: remove it yourself or choose "
                     "another folder");
    }
    if (const auto in = input_inside(target_, inputs)) {
      throw BadInput("output folder " + target_.string() + " holds " + in->string() +
                     ", which this command reads; --force would delete it: choose another folder");
    }
  }
  const fs::path parent = parent_of(target_);
  made_ = prepare_parent(parent);
  remove_stale_siblings(target_, ".tmp-");
  staging_ = parent / (util::temporary_stem(target_) + ".tmp-" + std::to_string(::getpid()));
  fs::remove_all(staging_, ec);
  slot_ = take_slot(staging_);  // before the folder exists: a signal from now on removes it
  if (!fs::create_directory(staging_, ec) || ec) {
    release_slot(slot_);
    remove_made(made_);
    throw_output_error("cannot create output folder " + target_.string() + " (staging " +
                           staging_.string() + ")",
                       ec ? ec : std::make_error_code(std::errc::file_exists));
  }
  try {
    util::write_file_atomic(staging_ / kOutputMarker, kOutputMarkerText);
  } catch (...) {
    fs::remove_all(staging_, ec);
    release_slot(slot_);
    remove_made(made_);
    throw;
  }
}

StagedDir::~StagedDir() {
  std::error_code ec;
  if (!committed_) {
    fs::remove_all(staging_, ec);
    remove_made(made_);  // the folders made for it: a failed command leaves nothing
  }
  release_slot(slot_);
}

void StagedDir::commit() {
  // Everything on disk before the rename: ENOSPC or EIO surface here, while
  // the target is still untouched.
  sync_tree(staging_);
  set_state(slot_, kCommitting);
  fs::path old;
  try {
    if (fs::exists(target_)) {
      old = staging_;
      old += ".old";
      fs::rename(target_, old);
    }
    fs::rename(staging_, target_);
  } catch (...) {
    // Put back what was moved aside, so a failed commit changes nothing.
    std::error_code ec;
    if (!old.empty() && !fs::exists(target_, ec)) fs::rename(old, target_, ec);
    set_state(slot_, kStaging);
    if (g_pending_signal.load() != 0) exit_for_pending_signal(staging_);
    throw;
  }
  committed_ = true;
  std::error_code ec;
  if (!old.empty()) fs::remove_all(old, ec);
  // Makes the rename itself durable; the folder is in place whatever this says.
  try {
    util::fsync_path(parent_of(target_));
  } catch (const std::exception&) {
  }
  release_slot(slot_);
  if (g_pending_signal.load() != 0) exit_for_pending_signal({});
}

std::optional<fs::path> input_inside(const fs::path& dir, const std::vector<fs::path>& inputs) {
  std::error_code ec;
  const fs::path roots[] = {fs::weakly_canonical(dir, ec), fs::absolute(dir).lexically_normal()};
  for (const auto& in : inputs) {
    for (const fs::path& f : {fs::absolute(in).lexically_normal(), fs::weakly_canonical(in, ec)}) {
      for (const auto& root : roots) {
        const fs::path rel = f.lexically_relative(root);
        if (!rel.empty() && *rel.begin() != "..") return in;
      }
    }
  }
  return std::nullopt;
}

void check_output_file(const fs::path& path, bool force, const std::vector<fs::path>& inputs) {
  if (!is_plain_name(path)) throw BadInput("output file '" + path.string() + "': give a file name");
  if (path.filename().string().size() > util::kMaxNameBytes) {
    throw BadInput("output file '" + path.string() + "': its name is longer than " +
                   std::to_string(util::kMaxNameBytes) + " bytes");
  }
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  // (The path itself: a symlink, dangling or not, is there to be replaced.)
  const fs::file_status own = fs::symlink_status(path, ec);
  if (fs::is_directory(st)) throw BadInput("output file " + path.string() + " is a folder");
  // The file is written by a rename over the path: --force would replace a
  // FIFO, a device or a socket with a plain file (as root, /dev/null itself),
  // and a symlink with a file where the link was. (Said first: --force would
  // not help.)
  if (fs::exists(own) && !fs::is_regular_file(own)) {
    throw BadInput("output file " + path.string() + " exists and is not a regular file" +
                   (fs::is_symlink(own) ? " (a symbolic link)" : "") + " (--force replaces only a regular file)");
  }
  if (fs::exists(own) && !force) {
    throw BadInput("output file " + path.string() + " already exists (use --force to replace it)");
  }
  for (const auto& in : inputs) {
    if (fs::exists(own) && fs::equivalent(path, in, ec)) {
      throw BadInput("output file " + path.string() + " is " + in.string() +
                     ", which this command reads; --force would overwrite it: choose another name");
    }
  }
  // Its folder is made when the file is written (write_output_file), not now:
  // a command refused after this check leaves nothing behind. Here, that it
  // can be: the nearest folder that exists is one this process may write in.
  fs::path existing = fs::absolute(parent_of(path), ec);
  while (!fs::exists(existing, ec) && existing.has_parent_path() && existing != existing.parent_path()) {
    existing = existing.parent_path();
  }
  require_writable_folder(existing, parent_of(path));
  probe_create(existing, parent_of(path));
  if (fs::exists(parent_of(path), ec)) remove_stale_siblings(path, ".tmp.");
}

void write_output_file(const fs::path& path, std::string_view bytes) {
  const std::vector<fs::path> made = prepare_parent(parent_of(path));
  try {
    util::write_file_atomic(path, bytes);
  } catch (const util::FileError& e) {
    remove_made(made);
    // Root passes access(W_OK) on /proc or a read-only mount; the create then
    // fails, and that is the output location's fault, not the machine's.
    throw_output_error(e.what(), std::error_code(e.error(), std::generic_category()), false);
  } catch (...) {
    remove_made(made);
    throw;
  }
}

StdoutGuard::StdoutGuard() : previous_(std::cout.rdbuf(this)) {}

StdoutGuard::~StdoutGuard() { std::cout.rdbuf(previous_); }

bool StdoutGuard::put(const char* s, std::size_t n) {
  errno = 0;
  if (std::fwrite(s, 1, n, stdout) == n) return true;
  note_error(errno != 0 ? errno : EIO);
  return false;
}

int StdoutGuard::overflow(int ch) {
  if (ch == traits_type::eof()) return traits_type::not_eof(ch);
  const char c = traits_type::to_char_type(ch);
  return put(&c, 1) ? ch : traits_type::eof();
}

std::streamsize StdoutGuard::xsputn(const char* s, std::streamsize n) {
  return put(s, static_cast<std::size_t>(n)) ? n : 0;
}

int StdoutGuard::sync() {
  errno = 0;
  if (std::fflush(stdout) == 0) return 0;
  note_error(errno != 0 ? errno : EIO);
  return -1;
}

int StdoutGuard::finish(int exit_code) {
  std::cout.flush();
  sync();
  if (error_ == 0 && !std::ferror(stdout)) return exit_code;
  std::cerr << "tdmsim: error: writing standard output: "
            << (error_ != 0 ? std::strerror(error_) : "write failed") << "\n";
  return exit_code == 0 ? 1 : exit_code;
}

units::Bytes size_option(const std::string& text, const std::string& option) {
  const units::Parsed<units::Bytes> p = units::parse_byte_count(text);
  if (!p) throw BadInput(option + ": " + p.error);
  return p.value;
}

std::string failure_text(const std::exception& e) {
  // (sim_error.h's constant alone: tdmsim_cli does not link the simulator.)
  return dynamic_cast<const std::bad_alloc*>(&e) != nullptr ? sim::kOutOfHostMemory : e.what();
}

}  // namespace tdmsim::cli
