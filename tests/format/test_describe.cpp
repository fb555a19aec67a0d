// `tdmsim describe`: exit codes (0 ok, 1 output failure, 2 invalid or unreadable input), text and JSON
// output, example files, and the shipped examples staying in sync.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <unistd.h>
#include <nlohmann/json.hpp>

#include "apps/tdmsim/describe_command.h"
#include "descriptors/format/descriptor_file.h"
#include "descriptors/format/example_descriptors.h"

using namespace tdmsim;
using namespace tdmsim::format;
namespace fs = std::filesystem;

namespace {

struct TempDir {
  fs::path path;
  TempDir() : path(fs::temp_directory_path() / ("tdmsim-describe-" + std::to_string(::getpid()))) {
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

struct Run {
  int rc;
  std::string out, err;
};

Run describe(cli::DescribeOptions o) {
  std::ostringstream out, err;
  const int rc = cli::run_describe(o, out, err);
  return {rc, out.str(), err.str()};
}

std::vector<std::byte> read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::vector<char> raw((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto b = std::as_bytes(std::span(raw));
  return {b.begin(), b.end()};
}

void write_bytes(const fs::path& p, const std::vector<std::byte>& b) {
  std::ofstream out(p, std::ios::binary);
  out.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}

}  // namespace

TEST_CASE("describe --example writes files that describe back", "[describe]") {
  TempDir tmp;
  for (std::string kind : {"moe", "tensor"}) {
    const fs::path file = tmp.path / (kind + ".bin");
    const Run w = describe({"", "text", file.string(), kind});
    CHECK(w.rc == 0);
    CHECK(w.out.find("wrote") != std::string::npos);
    const Run t = describe({file.string(), "text", "", ""});
    CHECK(t.rc == 0);
    CHECK(t.err.empty());
    CHECK(t.out.find(kind == "moe" ? "MoE descriptor (TDMM) version 1"
                                   : "Tensor descriptor file (TDMT)") != std::string::npos);
    const Run j = describe({file.string(), "json", "", ""});
    REQUIRE(j.rc == 0);
    const auto doc = nlohmann::json::parse(j.out);
    CHECK(doc["kind"] == kind);
    CHECK(doc["version"] == 1);
  }
  const Run t = describe({(tmp.path / "moe.bin").string(), "text", "", ""});
  CHECK(t.out.find("time slots (") != std::string::npos);
  CHECK(t.out.find("gather") != std::string::npos);
}

TEST_CASE("describe: corrupt file exits 2 naming the error and offset", "[describe]") {
  TempDir tmp;
  auto b = encode(example_moe_descriptor());
  b[200] ^= std::byte{0x40};
  write_bytes(tmp.path / "bad.tdmm", b);
  const Run r = describe({(tmp.path / "bad.tdmm").string(), "text", "", ""});
  CHECK(r.rc == 2);
  CHECK(r.out.empty());
  CHECK(r.err.find("checksum_mismatch at byte 12") != std::string::npos);

  write_bytes(tmp.path / "short.tdmm", std::vector<std::byte>(b.begin(), b.begin() + 30));
  const Run s = describe({(tmp.path / "short.tdmm").string(), "json", "", ""});
  CHECK(s.rc == 2);
  CHECK(s.err.find("truncated at byte 30") != std::string::npos);

  write_bytes(tmp.path / "junk", std::vector<std::byte>(10, std::byte{'x'}));
  const Run j = describe({(tmp.path / "junk").string(), "text", "", ""});
  CHECK(j.rc == 2);
  CHECK(j.err.find("bad_magic") != std::string::npos);
}

TEST_CASE("describe: an unreadable FILE and bad options exit 2", "[describe]") {
  // A FILE that cannot be read is bad input (as for every other command).
  CHECK(describe({"/nonexistent/descriptor.tdmm", "text", "", ""}).rc == 2);
  CHECK(describe({"", "text", "", ""}).rc == 2);
  CHECK(describe({"", "text", "", "moe"}).rc == 2);  // --example without --output
  CHECK(describe({"x", "text", "out", "moe"}).rc == 2);
  TempDir tmp;
  CHECK(describe({"", "text", (tmp.path / "no-such-dir-file").string(), "bogus"}).rc == 2);
}

TEST_CASE("describe --output writes the dump to a file", "[describe]") {
  TempDir tmp;
  const fs::path bin = tmp.path / "t.tdmt";
  REQUIRE(describe({"", "text", bin.string(), "tensor"}).rc == 0);
  const fs::path txt = tmp.path / "t.json";
  const Run r = describe({bin.string(), "json", txt.string(), ""});
  CHECK(r.rc == 0);
  CHECK(r.out.empty());
  std::ifstream in(txt);
  const auto doc = nlohmann::json::parse(in);
  CHECK(doc["descriptors"].size() == 2);
  CHECK(doc["gather_bit_layout"] == "mlir");
}

TEST_CASE("shipped example descriptors equal the generated ones", "[describe]") {
  const fs::path dir = fs::path(TDMSIM_SOURCE_DIR) / "validation" / "data" / "descriptors";
  CHECK(read_bytes(dir / "example-moe.tdmm") == encode(example_moe_descriptor()));
  CHECK(read_bytes(dir / "example-tensor.tdmt") == encode(example_tensor_file()));
  const auto moe = decode_any(read_bytes(dir / "example-moe.tdmm"));
  REQUIRE(moe.ok());
  CHECK(std::holds_alternative<MoeDescriptor>(moe.value()));
}
