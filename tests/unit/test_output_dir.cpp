// Output handling (issue 19, item 9): checked writes, the staged output
// folder, output-path errors as bad input, and stale staging siblings.
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <new>
#include <stdexcept>
#include <string>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "apps/tdmsim/output_dir.h"
#include "workloads/util/atomic_write.h"

namespace fs = std::filesystem;
using tdmsim::cli::BadInput;
using tdmsim::cli::StagedDir;

namespace {

struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() / ("tdmsim-output-test-" + std::to_string(::getpid()));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

// Sets the write-failure test hook for one scope.
struct FailWritesAfter {
  explicit FailWritesAfter(const char* bytes) { ::setenv("TDMSIM_TEST_FAIL_WRITE_AFTER", bytes, 1); }
  ~FailWritesAfter() { ::unsetenv("TDMSIM_TEST_FAIL_WRITE_AFTER"); }
};

void touch(const fs::path& p, const std::string& text = "x") { std::ofstream(p) << text; }

int entries(const fs::path& dir) {
  int n = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir)) ++n;
  return n;
}

// A PID that belonged to a process which has exited (and been reaped).
pid_t dead_pid() {
  const pid_t pid = ::fork();
  if (pid == 0) ::_exit(0);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return pid;
}

}  // namespace

TEST_CASE("OutFile reports a full disk on write or close", "[output]") {
  // /dev/full fails every write with ENOSPC: the real error, no test hook.
  tdmsim::util::OutFile f("/dev/full");
  try {
    f.write("hello");
    f.close();
    FAIL("no error");
  } catch (const std::runtime_error& e) {
    CHECK_THAT(e.what(), Catch::Contains("/dev/full") && Catch::Contains("No space left on device"));
  }
}

TEST_CASE("write_file_atomic leaves nothing behind when a write fails", "[output]") {
  TempDir tmp;
  const fs::path file = tmp.path / "out.json";
  FailWritesAfter hook("10");
  try {
    tdmsim::util::write_file_atomic(file, std::string(100, 'x'));
    FAIL("no error");
  } catch (const std::runtime_error& e) {
    CHECK_THAT(e.what(), Catch::Contains(file.string()) && Catch::Contains("No space left on device"));
  }
  CHECK(entries(tmp.path) == 0);  // neither the file nor its temporary
  // Under the limit the hook lets the write through.
  tdmsim::util::write_file_atomic(file, "short");
  CHECK(fs::file_size(file) == 5);
}

TEST_CASE("StagedDir refuses an existing target without --force", "[output]") {
  TempDir tmp;
  const fs::path out = tmp.path / "out";
  fs::create_directories(out);
  touch(out / "keep.txt");
  CHECK_THROWS_WITH(StagedDir(out, false, {}), Catch::Contains(out.string()) && Catch::Contains("--force"));
  CHECK(fs::exists(out / "keep.txt"));
  CHECK(entries(tmp.path) == 1);  // no staging sibling left
  // --force does not empty a folder tdmsim did not write (no marker file).
  CHECK_THROWS_WITH(StagedDir(out, true, {}),
                    Catch::Contains(out.string()) && Catch::Contains("exists without .tdmsim-output"));
  CHECK(fs::exists(out / "keep.txt"));
  CHECK(entries(tmp.path) == 1);
  // A folder a StagedDir wrote carries the marker, and --force replaces it.
  fs::remove_all(out);
  {
    StagedDir d(out, false, {});
    touch(d.file("old.txt"));
    d.commit();
  }
  CHECK(fs::exists(out / tdmsim::cli::kOutputMarker));
  {
    StagedDir d(out, true, {});
    touch(d.file("new.txt"));
    d.commit();
  }
  CHECK(fs::exists(out / "new.txt"));
  CHECK_FALSE(fs::exists(out / "old.txt"));
  CHECK(fs::exists(out / tdmsim::cli::kOutputMarker));
  CHECK(entries(tmp.path) == 1);  // the old folder, moved aside, is gone
  // An empty folder is replaced too.
  const fs::path empty = tmp.path / "empty";
  fs::create_directories(empty);
  {
    StagedDir d(empty, true, {});
    touch(d.file("new.txt"));
    d.commit();
  }
  CHECK(fs::exists(empty / "new.txt"));
}

TEST_CASE("a long legal output name keeps a legal temporary, a name over 255 bytes is bad input", "[output]") {
  TempDir tmp;
  const fs::path folder = tmp.path / std::string(250, 'c');
  {
    StagedDir d(folder, false, {});
    touch(d.file("x.txt"));
    d.commit();
  }
  CHECK(fs::exists(folder / "x.txt"));
  const fs::path file = tmp.path / (std::string(250, 'f') + ".json");
  tdmsim::cli::check_output_file(file, false, {});
  tdmsim::cli::write_output_file(file, "{}");
  CHECK(fs::file_size(file) == 2);
  CHECK(tdmsim::util::temporary_stem(file).size() + 19 <= tdmsim::util::kMaxNameBytes);
  CHECK(tdmsim::util::temporary_stem(tmp.path / "short") == ".short");
  CHECK(entries(tmp.path) == 2);  // no temporary left
  const fs::path too_long = tmp.path / std::string(256, 'd');
  CHECK_THROWS_WITH(StagedDir(too_long, false, {}), Catch::Contains("longer than 255 bytes"));
  CHECK_THROWS_WITH(tdmsim::cli::check_output_file(too_long, false, {}), Catch::Contains("longer than 255 bytes"));
}

TEST_CASE("check_output_file: --force replaces only a regular file", "[output]") {
  TempDir tmp;
  const fs::path fifo = tmp.path / "fifo";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  CHECK_THROWS_WITH(tdmsim::cli::check_output_file(fifo, true, {}),
                    Catch::Contains(fifo.string()) && Catch::Contains("not a regular file"));
  CHECK(fs::is_fifo(fifo));
  const fs::path plain = tmp.path / "plain";
  touch(plain);
  CHECK_NOTHROW(tdmsim::cli::check_output_file(plain, true, {}));
  // A symlink, even a dangling one, is there: refused without --force, and
  // with it (the rename would put a file where the link was).
  const fs::path dangling = tmp.path / "dangling";
  fs::create_symlink(tmp.path / "nowhere", dangling);
  CHECK_THROWS_WITH(tdmsim::cli::check_output_file(dangling, false, {}), Catch::Contains("a symbolic link"));
  CHECK_THROWS_WITH(tdmsim::cli::check_output_file(dangling, true, {}), Catch::Contains("a symbolic link"));
  // A dangling symlink above an output is the user's: a failed attempt to
  // make the folder through it leaves the link in place.
  CHECK_THROWS_AS(StagedDir(dangling / "out", false, {}), BadInput);
  CHECK(fs::is_symlink(dangling));
  // A file the command reads is never its output, under any name for it.
  CHECK_THROWS_WITH(tdmsim::cli::check_output_file(plain, true, {tmp.path / "." / "plain"}),
                    Catch::Contains("which this command reads"));
}

TEST_CASE("StagedDir: unusable output locations are bad input naming the path", "[output]") {
  TempDir tmp;
  // A dangling symlink: refused before any work (the rename at the end would fail).
  const fs::path dangling = tmp.path / "dangling";
  fs::create_symlink(tmp.path / "nowhere", dangling);
  CHECK_THROWS_WITH(StagedDir(dangling, true, {}), Catch::Contains("symbolic link to nothing"));
  const fs::path file = tmp.path / "a-file";
  touch(file);
  // The target is a file: even --force replaces only a folder.
  CHECK_THROWS_AS(StagedDir(file, true, {}), BadInput);
  CHECK_THROWS_WITH(StagedDir(file, true, {}), Catch::Contains(file.string()) && Catch::Contains("not a folder"));
  CHECK(fs::is_regular_file(file));
  // The parent is a file.
  CHECK_THROWS_AS(StagedDir(file / "out", false, {}), BadInput);
  CHECK_THROWS_WITH(StagedDir(file / "out", false, {}), Catch::Contains(file.string()));
  CHECK_THROWS_AS(StagedDir(tmp.path / "..", true, {}), BadInput);
  // A folder without write permission (root may write anywhere: skipped there).
  if (::geteuid() != 0) {
    const fs::path ro = tmp.path / "read-only";
    fs::create_directories(ro);
    fs::permissions(ro, fs::perms::owner_read | fs::perms::owner_exec);
    CHECK_THROWS_AS(StagedDir(ro / "out", false, {}), BadInput);
    CHECK_THROWS_WITH(StagedDir(ro / "out", false, {}), Catch::Contains(ro.string()));
    fs::permissions(ro, fs::perms::owner_all);
  }
}

TEST_CASE("StagedDir removes its staging folder when not committed", "[output]") {
  TempDir tmp;
  const fs::path out = tmp.path / "out";
  {
    StagedDir d(out, false, {});
    touch(d.file("partial.json"));
    CHECK(entries(tmp.path) == 1);
  }
  CHECK(entries(tmp.path) == 0);
}

TEST_CASE("stale staging siblings of dead processes are removed, live ones kept", "[output]") {
  TempDir tmp;
  const fs::path out = tmp.path / "out";
  const std::string dead = std::to_string(dead_pid());
  const std::string live = std::to_string(::getppid());  // our parent runs
  for (const std::string& name : {".out.tmp-" + dead, ".out.tmp-" + dead + ".old", ".out.tmp-" + live,
                                 ".other.tmp-" + dead, ".out.tmp-" + dead + "x"}) {
    fs::create_directories(tmp.path / name);
    touch(tmp.path / name / "partial.json");
  }
  touch(tmp.path / (".f.json.tmp." + dead));
  {
    StagedDir d(out, false, {});
    d.commit();
  }
  CHECK_FALSE(fs::exists(tmp.path / (".out.tmp-" + dead)));
  CHECK_FALSE(fs::exists(tmp.path / (".out.tmp-" + dead + ".old")));
  CHECK(fs::exists(tmp.path / (".out.tmp-" + live)));       // its process may still be writing
  CHECK(fs::exists(tmp.path / (".other.tmp-" + dead)));     // another target's
  CHECK(fs::exists(tmp.path / (".out.tmp-" + dead + "x")));  // not our pattern
  tdmsim::cli::check_output_file(tmp.path / "f.json", false, {});
  CHECK_FALSE(fs::exists(tmp.path / (".f.json.tmp." + dead)));
}

TEST_CASE("check_output_file: existing file needs --force - folders and bad parents are bad input",
          "[output]") {
  TempDir tmp;
  const fs::path file = tmp.path / "f.yaml";
  touch(file);
  CHECK_THROWS_WITH(tdmsim::cli::check_output_file(file, false, {}),
                    Catch::Contains(file.string()) && Catch::Contains("--force"));
  CHECK_NOTHROW(tdmsim::cli::check_output_file(file, true, {}));
  CHECK_THROWS_AS(tdmsim::cli::check_output_file(tmp.path, true, {}), BadInput);
  CHECK_THROWS_AS(tdmsim::cli::check_output_file(file / "x.yaml", true, {}), BadInput);
  CHECK_NOTHROW(tdmsim::cli::check_output_file(tmp.path / "new" / "x.yaml", false, {}));
  // Nothing is made until the file is written: a command refused after the check leaves no folder.
  CHECK_FALSE(fs::exists(tmp.path / "new"));
  tdmsim::cli::write_output_file(tmp.path / "new" / "x.yaml", "a: 1\n");
  CHECK(fs::exists(tmp.path / "new" / "x.yaml"));
}

TEST_CASE("failure_text: an exception's what(), or for running out of host memory what to do", "[output]") {
  // The commands outside the simulator's library (emulate, gpu-case, describe)
  // print this for an exit-1 failure; for std::bad_alloc main's handler's text.
  CHECK(tdmsim::cli::failure_text(std::runtime_error("disk on fire")) == "disk on fire");
  const std::string oom = tdmsim::cli::failure_text(std::bad_alloc());
  CHECK(oom.find("out of host memory") == 0);
  CHECK(oom.find("TDMSIM_MEMORY_LIMIT") != std::string::npos);
  CHECK(oom != std::bad_alloc().what());
}
