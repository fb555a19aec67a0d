// Catch2's implementation (its session, reporters and matchers), compiled once
// for every Catch2 test executable (tests/CMakeLists.txt). Catch2 v2 declares
// Catch::Session only beside its implementation, so the runners
// (unit/main.cpp's main, sim/sim_test_main.cpp's sc_main) call it through
// these functions.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "tests/unit/catch_session.h"

namespace {

// The names of the test cases the session's command line runs, in Catch2's
// order; empty when it lists or shows help.
std::vector<std::string> selected(Catch::Session& session) {
  const Catch::ConfigData& data = session.configData();
  if (data.showHelp || data.libIdentify || data.listTests || data.listTestNamesOnly || data.listTags ||
      data.listReporters) {
    return {};
  }
  const Catch::Config& config = session.config();
  const std::vector<Catch::TestCase>& all = Catch::getAllTestCasesSorted(config);
  std::vector<std::string> names;
  if (!config.hasTestFilters()) {  // as Catch2's own run: every test case that is not hidden
    for (const Catch::TestCase& t : all) {
      if (!t.isHidden()) names.push_back(t.name);
    }
    return names;
  }
  for (const Catch::TestCase& t : Catch::filterTests(all, config.testSpec(), config)) names.push_back(t.name);
  return names;
}

// The test spec of exactly `name`: the characters Catch2's spec parser reads
// escaped, as catch_discover_tests does.
std::string exact_spec(const std::string& name) {
  std::string spec;
  for (const char c : name) {
    if (c == ',' || c == '[' || c == ']' || c == '\\') spec += '\\';
    spec += c;
  }
  return spec;
}

// Runs the one test case `name` in a forked child; its exit status (1 when it
// did not exit). Catch2 allows one Session per process, so the child runs the
// parent's, which has not run anything yet.
int run_in_child(Catch::Session& session, const std::string& name) {
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) {
    std::perror("fork");
    return 1;
  }
  if (pid == 0) {
    Catch::ConfigData data = session.configData();
    data.testsOrTags = {exact_spec(name)};
    // A spec that matched no case would otherwise exit 0 and count as a pass.
    data.warnings = static_cast<Catch::WarnAbout::What>(data.warnings | Catch::WarnAbout::NoTests);
    session.useConfigData(data);
    const int rc = session.run();
    std::cout.flush();
    std::fflush(nullptr);
    ::_exit(rc);
  }
  int status = 0;
  if (::waitpid(pid, &status, 0) != pid) return 1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

}  // namespace

int tdmsim_catch_run(int argc, char* argv[]) { return Catch::Session().run(argc, argv); }

int tdmsim_catch_run_each_in_child(int argc, char* argv[]) {
  Catch::Session session;
  if (const int rc = session.applyCommandLine(argc, argv); rc != 0) return rc;
  const std::vector<std::string> names = selected(session);
  if (names.size() <= 1) return session.run();
  if (!session.configData().outputFilename.empty()) {
    std::fprintf(stderr,
                 "error: --out: %zu test cases would each run in a process of its own and overwrite "
                 "the file; select one test case, or write to standard output\n",
                 names.size());
    return 2;
  }
  std::vector<std::string> failed;
  for (const std::string& name : names) {
    if (run_in_child(session, name) != 0) failed.push_back(name);
  }
  // On stderr: stdout may carry a reporter's XML.
  std::fprintf(stderr, "\n%zu test cases, each in a process of its own: %zu passed, %zu failed\n",
               names.size(), names.size() - failed.size(), failed.size());
  for (const std::string& name : failed) std::fprintf(stderr, "  failed: %s\n", name.c_str());
  return failed.empty() ? 0 : 1;
}
