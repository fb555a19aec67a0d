// Reading user input: util::read_input_file refuses anything but a regular
// file within its kind's limit without blocking or reading it all, and
// config::parse_yaml refuses YAML that would otherwise be ignored (a second
// document, unknown tags), invalid UTF-8, deep nesting and alias bombs, each
// with file:line:column; a long base: chain loads in linear time.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "workloads/config/diagnostics.h"
#include "workloads/config/loader.h"
#include "workloads/config/yaml_parse.h"
#include "workloads/util/input_file.h"

using namespace tdmsim;
namespace fs = std::filesystem;

namespace {

// A fresh folder under the system temp folder, removed at the end of the test.
struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() /
           ("tdmsim-input-" + std::to_string(::getpid()) + "-" +
            std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()));
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

void write(const fs::path& p, const std::string& text) {
  std::ofstream(p, std::ios::binary) << text;
}

// The reason read_input_file gives for `p`, or "" if it reads.
std::string refusal(const fs::path& p, util::InputKind kind = util::InputKind::yaml) {
  try {
    (void)util::read_input_file(p, kind);
  } catch (const util::InputFileError& e) {
    CHECK(e.path() == p);
    return e.reason();
  }
  return "";
}

// The first diagnostic parse_yaml reports for `text`, or "" if it parses.
config::Diagnostic yaml_error(const std::string& text) {
  try {
    (void)config::parse_yaml(text, "t.yaml");
  } catch (const config::ConfigError& e) {
    return e.diagnostics().front();
  }
  return {{"", 0, 0}, "", ""};
}

}  // namespace

TEST_CASE("input files: a regular file within the limit reads whole", "[input]") {
  TempDir d;
  write(d.path / "a.yaml", "name: x\n");
  CHECK(util::read_input_file(d.path / "a.yaml", util::InputKind::yaml) == "name: x\n");
  write(d.path / "empty.yaml", "");
  CHECK(util::read_input_file(d.path / "empty.yaml", util::InputKind::yaml).empty());
}

TEST_CASE("input files: devices, FIFOs and folders are refused without blocking", "[input]") {
  TempDir d;
  CHECK(refusal("/dev/zero") == "is not a regular file (a character device)");
  CHECK(refusal("/dev/zero", util::InputKind::routing_trace) ==
        "is not a regular file (a character device)");
  CHECK(refusal("/dev/zero", util::InputKind::descriptor) ==
        "is not a regular file (a character device)");
  // No writer ever opens the FIFO: a blocking open or read would hang here.
  REQUIRE(::mkfifo((d.path / "fifo").c_str(), 0600) == 0);
  CHECK(refusal(d.path / "fifo") == "is not a regular file (a FIFO)");
  CHECK(refusal(d.path) == "is a folder, not a file");
  CHECK(refusal(d.path / "missing.yaml") == "does not exist");
  CHECK(refusal(d.path / "missing" / "x.yaml") == "does not exist");
}

TEST_CASE("input files: over the kind's limit is refused before reading", "[input]") {
  TempDir d;
  const fs::path big = d.path / "big.yaml";
  write(big, "");
  fs::resize_file(big, util::kMaxYamlBytes + 1);  // sparse: nothing is written
  const std::string r = refusal(big);
  CHECK(r.find("over the 16 MiB limit for a YAML file") != std::string::npos);
  // Exactly at the limit is fine for a YAML file; the same file is a
  // descriptor within its (larger) limit.
  fs::resize_file(big, util::kMaxYamlBytes);
  CHECK(refusal(big).empty());
  fs::resize_file(big, util::kMaxDescriptorBytes + 1);
  CHECK(refusal(big, util::InputKind::descriptor).find("256 MiB limit for a descriptor file") !=
        std::string::npos);
  fs::resize_file(big, util::kMaxRoutingTraceBytes + 1);
  CHECK(refusal(big, util::InputKind::routing_trace).find("1 GiB limit for a routing trace") !=
        std::string::npos);
}

TEST_CASE("input files: filesystem errors become reasons, not exceptions", "[input]") {
  TempDir d;
  // A name over NAME_MAX (255): ENAMETOOLONG.
  const fs::path long_name = d.path / (std::string(300, 'a') + ".yaml");
  CHECK(refusal(long_name).find("cannot be read (file name too long)") != std::string::npos);
  CHECK_FALSE(util::input_exists(long_name));
  // A symbolic link to itself: ELOOP.
  fs::create_symlink("loop.yaml", d.path / "loop.yaml");
  CHECK(refusal(d.path / "loop.yaml").find("too many levels of symbolic links") !=
        std::string::npos);
  CHECK_FALSE(util::input_exists(d.path / "loop.yaml"));
}

TEST_CASE("input files: a name that is not UTF-8 is refused", "[input]") {
  TempDir d;
  const fs::path bad = d.path / "bad\xff.yaml";
  write(bad, "name: x\n");
  CHECK(refusal(bad).find("has a name that is not valid UTF-8") != std::string::npos);
}

TEST_CASE("UTF-8: the first invalid byte is found", "[input]") {
  using util::invalid_utf8_at;
  constexpr auto npos = std::string_view::npos;
  CHECK(invalid_utf8_at("plain ascii") == npos);
  CHECK(invalid_utf8_at("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80") == npos);  // é € 😀
  CHECK(invalid_utf8_at("ab\xff") == 2);                 // never valid
  CHECK(invalid_utf8_at("a\x80") == 1);                  // lone continuation byte
  CHECK(invalid_utf8_at("\xc0\xaf") == 0);               // overlong '/'
  CHECK(invalid_utf8_at("\xe0\x80\xaf") == 0);           // overlong, 3 bytes
  CHECK(invalid_utf8_at("\xed\xa0\x80") == 0);           // surrogate U+D800
  CHECK(invalid_utf8_at("\xf4\x90\x80\x80") == 0);       // above U+10FFFF
  CHECK(invalid_utf8_at("ok\xe2\x82") == 2);             // truncated at the end
  CHECK(invalid_utf8_at("\xc3(") == 0);                  // bad continuation
}

TEST_CASE("YAML: one document, core tags only", "[input][yaml]") {
  CHECK(yaml_error("a: 1\nb: !!str 2\nc: !!int 3\nd: !!map {x: 1}\n").message.empty());
  CHECK(yaml_error("---\na: 1\n...\n").message.empty());  // markers around one document

  const auto second = yaml_error("a: 1\n---\nb: 2\n");
  CHECK(second.where.line == 2);
  CHECK(second.message.find("a second YAML document") != std::string::npos);

  const auto tag = yaml_error("a: 1\nb: !custom 2\n");
  CHECK(tag.where.line == 2);
  CHECK(tag.where.column == 4);
  CHECK(tag.message.find("unsupported tag '!custom'") != std::string::npos);
  CHECK(yaml_error("a: !custom\n  x: 1\n").message.find("'!custom'") != std::string::npos);
  CHECK(yaml_error("a: !!binary aGk=\n").message.find("'!!binary'") != std::string::npos);
  CHECK(yaml_error("a: !<tag:example.com,2000:x> 1\n").message.find("unsupported tag") !=
        std::string::npos);
}

TEST_CASE("YAML: invalid UTF-8 in any scalar is refused where it is", "[input][yaml]") {
  const auto value = yaml_error("name: ok\ndescription: caf\xe9\n");
  CHECK(value.where.file == "t.yaml");
  CHECK(value.where.line == 2);
  CHECK(value.where.column == 14);
  CHECK(value.message.find("invalid UTF-8 at offset 3 of this key or value (byte 0xe9)") !=
        std::string::npos);
  CHECK(yaml_error("k\xff: 1\n").where.line == 1);             // a key
  CHECK(yaml_error("a: [x, \"y\xc0\xaf\"]\n").where.line == 1);  // quoted, in a list
  CHECK(yaml_error("name: caf\xc3\xa9\n").message.empty());       // valid UTF-8 is fine
}

TEST_CASE("YAML: deep nesting is refused with its place", "[input][yaml]") {
  const int levels = config::kMaxYamlDepth + 1;
  const auto flow = yaml_error("a: " + std::string(static_cast<std::size_t>(levels), '[') +
                               std::string(static_cast<std::size_t>(levels), ']') + "\n");
  CHECK(flow.where.line == 1);
  CHECK(flow.message == "nesting deeper than 64 levels of lists and mappings");
  // Far deeper than yaml-cpp's own limit, which said only "bad file" or
  // overflowed its stack.
  const auto deep = yaml_error(std::string(100000, '[') + std::string(100000, ']'));
  CHECK(deep.message.find("nesting deeper than 64 levels") != std::string::npos);
  std::string block;
  for (int i = 0; i < levels; ++i) block += std::string(static_cast<std::size_t>(i), ' ') + "k:\n";
  CHECK(yaml_error(block).message.find("nesting deeper than 64 levels") != std::string::npos);
  // At the limit itself parses.
  const int ok = config::kMaxYamlDepth;
  CHECK(yaml_error(std::string(static_cast<std::size_t>(ok), '[') +
                   std::string(static_cast<std::size_t>(ok), ']'))
            .message.empty());
}

TEST_CASE("YAML: aliases cannot multiply work or form a cycle", "[input][yaml]") {
  CHECK(yaml_error("a: &x {p: 1}\nb: *x\nc: [*x, *x]\n").message.empty());
  // "Billion laughs": nine levels of nine aliases each expand to 9^9 values.
  std::string bomb = "l0: &l0 [x, x, x, x, x, x, x, x, x]\n";
  for (int i = 1; i <= 9; ++i) {
    const std::string prev = "*l" + std::to_string(i - 1);
    bomb += "l" + std::to_string(i) + ": &l" + std::to_string(i) + " [" + prev;
    for (int k = 1; k < 9; ++k) bomb += ", " + prev;
    bomb += "]\n";
  }
  // Refused while counting, before any expansion: without the count this
  // document takes yaml-cpp hundreds of millions of nodes.
  const auto laughs = yaml_error(bomb);
  CHECK(laughs.message.find("more than 100000 values with its aliases expanded") !=
        std::string::npos);
  CHECK(laughs.where.line == 6);  // l0..l4 hold 74,732 values; the first *l4 in l5 passes 10^5
  // Plain size counts too: yaml-cpp needs seconds and hundreds of MB for a
  // million values, within the 16 MiB file limit.
  std::string flat = "a: [1";
  for (std::uint64_t i = 1; i <= config::kMaxYamlNodes; ++i) flat += ",1";
  CHECK(yaml_error(flat + "]\n").message.find("more than 100000 values") != std::string::npos);
  const auto cycle = yaml_error("a: &x [1, *x]\n");
  CHECK(cycle.where.line == 1);
  CHECK(cycle.message.find("an alias inside the node its anchor names") != std::string::npos);
  CHECK(yaml_error("a: &x {k: *x}\n").message.find("(a cycle)") != std::string::npos);
}

namespace {

// What a YAML parser makes of `text`: the tree (as YAML, with each node's
// line and column) or the first diagnostic.
template <typename Parse>
std::string yaml_outcome(Parse parse, const std::string& text) {
  try {
    const YAML::Node root = parse(text, "t.yaml");
    std::string marks;
    const auto walk = [&](const auto& self, const YAML::Node& n) -> void {
      marks += std::to_string(n.Mark().line) + ":" + std::to_string(n.Mark().column) + " ";
      for (auto it = n.begin(); it != n.end(); ++it) {
        if (n.IsMap()) {
          self(self, it->first), self(self, it->second);
        } else {
          self(self, *it);
        }
      }
    };
    walk(walk, root);
    return "tree " + YAML::Dump(root) + "\n" + marks;
  } catch (const config::ConfigError& e) {
    const auto& d = e.diagnostics().front();
    return "error " + d.where.file + ":" + std::to_string(d.where.line) + ":" + std::to_string(d.where.column) +
           " " + d.message;
  }
}

}  // namespace

TEST_CASE("YAML: parse_yaml's one-pass path gives parse_yaml_guarded's tree or error", "[input][yaml][host-speed]") {
  std::vector<std::string> texts = {
      "", "a: 1\n", "a: 1\nb: !!str 2\n", "---\na: 1\n...\n", "a: 1\n---\nb: 2\n", "a: 1\r---\rb: 2\r",
      "a: 1\nb: !custom 2\n", "name: caf\xc3\xa9\n", "name: ok\ndescription: caf\xe9\n", "k\xff: 1\n",
      "a: \"x\\ty\"\n", "a: &x {p: 1}\nb: *x\n", "a: &x [1, *x]\n", "%YAML 1.2\n---\na: 1\n", "a: [1, 2\n",
      "a: {b: [c, {d: e}]}\n? [x, y]\n: z\n", "- - - a\n  - b\n- c\n", "a:\n  - b: 1\n    c: 2\n  -\n", "a: b: c\n",
      "a: 1 # a comment with - and :\n\tb: 2\n", "'a': \"b\"\n"};
  for (const int depth : {config::kMaxYamlDepth / 2 - 1, config::kMaxYamlDepth / 2, config::kMaxYamlDepth,
                          config::kMaxYamlDepth + 1}) {
    texts.push_back(std::string(static_cast<std::size_t>(depth), '[') + std::string(static_cast<std::size_t>(depth), ']'));
  }
  // The shipped files (machines, models, kernels, scenarios...).
  for (const auto& entry : fs::recursive_directory_iterator(fs::path(TDMSIM_SOURCE_DIR) / "workloads")) {
    if (entry.is_regular_file() && entry.path().extension() == ".yaml") {
      texts.push_back(util::read_input_file(entry.path(), util::InputKind::yaml));
    }
  }
  CHECK(texts.size() > 40);
  for (const std::string& text : texts) {
    INFO(text.substr(0, 200));
    CHECK(yaml_outcome(config::parse_yaml, text) == yaml_outcome(config::parse_yaml_guarded, text));
  }
}

TEST_CASE("base chains load in linear time and cycles are still found", "[input][base]") {
  TempDir d;
  // Overlays m0 -> m1 -> ... -> the last, which names a shipped machine. The
  // quadratic check took 9.3 s for 1,000 (about 37 s for 2,000).
  const fs::path shipped = fs::path(TDMSIM_SOURCE_DIR) / "workloads/machines/mi300x.yaml";
  const auto write_chain = [&](const std::string& prefix, int n) {
    for (int i = 0; i < n; ++i) {
      const std::string base = i + 1 < n ? prefix + std::to_string(i + 1) + ".yaml" : shipped.string();
      write(d.path / (prefix + std::to_string(i) + ".yaml"),
            "kind: machine\nbase: " + base + "\nname: " + prefix + std::to_string(i) + "\n");
    }
  };
  const config::Loader loader({fs::path(TDMSIM_SOURCE_DIR) / "workloads"});
  // Linear, not fast: a chain four times longer must not take much more than
  // four times as long (a quadratic check takes sixteen). A ratio of two
  // timings on the same machine, so the load of the machine cancels out; each
  // the best of three, since another job can only lengthen a run (one timing
  // each failed once on a 2-core machine at load 16); the 0.5 s slack covers
  // timer noise on short runs.
  const auto time_chain = [&](const std::string& prefix, int n) {
    write_chain(prefix, n);
    double best = 0;
    for (int round = 0; round < 3; ++round) {
      const auto start = std::chrono::steady_clock::now();
      const auto m = loader.machine(d.path / (prefix + "0.yaml"));
      const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
      CHECK(m.spec.name == prefix + "0");
      CHECK(m.chain.size() == static_cast<std::size_t>(n) + 1);
      best = round == 0 ? took.count() : std::min(best, took.count());
    }
    return best;
  };
  const double short_s = time_chain("s", 500);
  const double long_s = time_chain("m", 2000);
  INFO("500 files: " << short_s << " s, 2000 files: " << long_s << " s");
  CHECK(long_s < 8 * short_s + 0.5);
  constexpr int kChain = 2000;

  // The last overlay names the first through another spelling of its path.
  write(d.path / ("m" + std::to_string(kChain - 1) + ".yaml"),
        "kind: machine\nbase: ../" + d.path.filename().string() + "/./m0.yaml\n");
  try {
    (void)loader.machine(d.path / "m0.yaml");
    FAIL("a base cycle was accepted");
  } catch (const config::ConfigError& e) {
    const auto& first = e.diagnostics().front();
    CHECK(first.key == "base");
    CHECK(first.where.line == 2);
    CHECK(first.message.starts_with("base cycle: "));
  }
}
