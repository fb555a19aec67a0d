// `tdmsim collective`: the time of one all-to-all or all-gather on a machine's
// interconnect (sim/net/collective.h), without a layer around it.
#include "apps/tdmsim/collective_command.h"

#include <cctype>
#include <charconv>
#include <filesystem>
#include <memory>
#include <sstream>
#include <stdexcept>

#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include "apps/tdmsim/output_dir.h"
#include "apps/tdmsim/input_files.h"
#include "sim/net/collective.h"
#include "sim/platform/host_memory.h"
#include "workloads/config/diagnostics.h"
#include "workloads/config/loader.h"
#include "workloads/config/writer.h"
#include "workloads/util/atomic_write.h"
#include "workloads/util/input_file.h"

namespace tdmsim::cli {
namespace {

namespace fs = std::filesystem;

struct CollectiveOpts {
  std::string machine;
  std::string op;
  std::string bytes;
  std::string traffic;
  std::string message_bytes;
  std::uint32_t gpus = 8;
  std::uint32_t nodes = 1;
  std::string algorithm = "direct";
  std::string output;
  bool force = false;
  bool quiet = false;
};

// An n x n CSV of byte counts: row = sender, column = receiver. Each cell is
// a whole number of bytes in decimal (spaces around it allowed), at most
// 2^53 so that it is exact as the double the model computes with.
net::TrafficMatrix read_traffic(const std::string& path, std::uint32_t gpus) {
  std::string text;
  try {
    text = util::read_input_file(path, util::InputKind::traffic_matrix);
  } catch (const util::InputFileError& e) {
    throw BadInput("--traffic: " + std::string(e.what()));
  }
  net::TrafficMatrix m(gpus);
  std::istringstream in(text);
  std::string line;
  std::size_t row = 0;
  std::size_t line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || line[0] == '#') continue;
    if (row >= gpus) {
      throw BadInput(fmt::format("{}:{}: more than --gpus ({}) rows", path, line_no, gpus));
    }
    std::size_t col = 0, start = 0;
    while (start <= line.size()) {
      const std::size_t comma = std::min(line.find(',', start), line.size());
      if (col >= gpus) {
        throw BadInput(fmt::format("{}:{}: more than --gpus ({}) columns", path, line_no, gpus));
      }
      std::string_view cell(line.data() + start, comma - start);
      const std::size_t column = start + 1;
      while (!cell.empty() && (cell.front() == ' ' || cell.front() == '\t')) cell.remove_prefix(1);
      while (!cell.empty() && (cell.back() == ' ' || cell.back() == '\t')) cell.remove_suffix(1);
      std::uint64_t v = 0;
      const auto [end, ec] = std::from_chars(cell.data(), cell.data() + cell.size(), v);
      if (cell.empty() || ec != std::errc{} || end != cell.data() + cell.size() || v > (std::uint64_t{1} << 53)) {
        throw BadInput(fmt::format("{}:{}:{}: expected a whole number of bytes (decimal digits, at most 2^53), "
                                   "got '{}'", path, line_no, column, config::printable(line.substr(start, comma - start))));
      }
      m.at(row, col++) = static_cast<double>(v);
      start = comma + 1;
    }
    if (col != gpus) {
      throw BadInput(fmt::format("{}:{}: {} columns, expected --gpus ({})", path, line_no, col,
                                 gpus));
    }
    ++row;
  }
  if (row != gpus) {
    throw BadInput(fmt::format("{}: {} rows, expected --gpus ({})", path, row, gpus));
  }
  return m;
}

void run_collective(const CollectiveOpts& o, CommandResult& result) {
  net::CollectiveOp op{};
  net::Algorithm algorithm{};
  if (!net::parse(o.op, op)) throw BadInput("--op: expected all_to_all or all_gather, got '" + o.op + "'");
  if (!net::parse(o.algorithm, algorithm)) {
    throw BadInput("--algorithm: expected direct or ring, got '" + o.algorithm + "'");
  }
  if (o.traffic.empty() == o.bytes.empty()) {
    throw BadInput("give exactly one of --bytes (uniform traffic) and --traffic (an all-to-all matrix)");
  }
  if (!o.traffic.empty() && op != net::CollectiveOp::all_to_all) {
    throw BadInput("--traffic is an all-to-all's matrix: use it with --op all_to_all");
  }
  const config::Loader loader(config::default_roots());
  const fs::path here = fs::current_path() / "_";
  const auto machine = loader.machine(
      loader.find(o.machine, config::SpecKind::machine, here, {"--machine", 0, 0}, "machine"));
  const MachineSpec& m = machine.spec;
  if (m.partition) {
    throw BadInput(fmt::format("machine {} ({}) has a partition: section; collectives are between whole GPUs "
                               "(docs/partitions.md)", m.name, machine.file.string()));
  }
  if (!m.interconnect) {
    throw BadInput(fmt::format("machine {} ({}) has no interconnect: section", m.name,
                               machine.file.string()));
  }
  const net::Placement where{o.gpus, o.nodes};
  const double message_bytes =
      o.message_bytes.empty() ? 0.0 : static_cast<double>(size_option(o.message_bytes, "--message-bytes").bytes);
  const std::uint32_t n = o.gpus;
  // The model's n x n tables of doubles, refused up front where they would
  // not fit (69 GB at 65536 GPUs): the traffic matrix (an all-to-all, or an
  // all-gather's direct algorithm) and a full mesh's link bundles.
  sim::MemoryEstimate need;
  if (op == net::CollectiveOp::all_to_all || algorithm == net::Algorithm::direct) {
    need.add(fmt::format("traffic matrix ({} x {} GPUs x 8 B)", n, n), std::uint64_t{n} * n * 8);
  }
  if (m.interconnect->topology == ScaleUpTopology::full_mesh) {
    need.add(fmt::format("link bundles of the full mesh ({} x {} x 8 B)", n, n), std::uint64_t{n} * n * 8);
  }
  sim::check_memory(need, sim::memory_limit(), fmt::format("collective on {} GPUs", n));
  // The output folder is checked before any work, so a bad --output fails at once.
  std::unique_ptr<StagedDir> dir;
  if (!o.output.empty()) {
    std::vector<fs::path> inputs = machine_files(machine);
    if (!o.traffic.empty()) inputs.emplace_back(o.traffic);
    dir = std::make_unique<StagedDir>(o.output, o.force, inputs);
  }
  net::CollectiveResult r;
  double size = 0;  // nccl-tests' size: bytes each GPU sends incl. its own slice, or gathers
  try {
    if (!o.traffic.empty()) {
      const auto traffic = read_traffic(o.traffic, n);
      for (std::uint32_t g = 0; g < n; ++g) size = std::max(size, traffic.sent(g) + traffic.at(g, g));
      r = net::all_to_all(*m.interconnect, where, traffic, algorithm, message_bytes);
    } else {
      size = static_cast<double>(size_option(o.bytes, "--bytes").bytes);
      if (op == net::CollectiveOp::all_to_all) {
        r = net::all_to_all(*m.interconnect, where, net::TrafficMatrix::uniform(n, size / n),
                            algorithm, message_bytes);
      } else {
        r = net::all_gather(*m.interconnect, where, size / n, algorithm, message_bytes);
      }
    }
  } catch (const std::invalid_argument& e) {
    throw BadInput(e.what());
  }
  const double algbw = r.time_s > 0 ? size / r.time_s : 0.0;
  const double busbw = net::bus_bandwidth(size, r.time_s, n);
  const double bottleneck_bw = r.time_s > 0 ? r.bottleneck_bytes / r.time_s : 0.0;
  if (!o.quiet) {
    fmt::print("{} on {}, {} GPUs on {} node{}, {}: {:.2f} us, algbw {:.1f} GB/s, busbw {:.1f} GB/s\n",
               net::name(op), m.name, n, o.nodes, o.nodes == 1 ? "" : "s", net::name(algorithm),
               r.time_s * 1e6, algbw / 1e9, busbw / 1e9);
    fmt::print("  bandwidth {:.2f} us (bottleneck {}: {:.0f} bytes, {:.1f} GB/s), latency {:.2f} us "
               "({} step{}), overhead {:.2f} us\n",
               r.bandwidth_s * 1e6, r.bottleneck.empty() ? "none" : r.bottleneck, r.bottleneck_bytes,
               bottleneck_bw / 1e9, r.latency_s * 1e6, r.steps, r.steps == 1 ? "" : "s",
               r.overhead_s * 1e6);
  }
  if (dir) {
    config::Json summary = config::Json::object();
    summary["machine"] = m.name;
    summary["op"] = std::string(net::name(op));
    summary["algorithm"] = std::string(net::name(algorithm));
    summary["gpus"] = n;
    summary["nodes"] = o.nodes;
    summary["size_bytes"] = size;
    summary["message_bytes"] = message_bytes;
    summary["time_us"] = r.time_s * 1e6;
    summary["bandwidth_us"] = r.bandwidth_s * 1e6;
    summary["latency_us"] = r.latency_s * 1e6;
    summary["overhead_us"] = r.overhead_s * 1e6;
    summary["steps"] = r.steps;
    summary["algbw_gb_s"] = algbw / 1e9;
    summary["busbw_gb_s"] = busbw / 1e9;
    summary["bottleneck"] = r.bottleneck;
    summary["bottleneck_bytes"] = r.bottleneck_bytes;
    summary["bottleneck_gb_s"] = bottleneck_bw / 1e9;
    config::Json ranks = config::Json::array();
    for (std::uint32_t g = 0; g < n; ++g) {
      ranks.push_back({{"gpu", g}, {"sent_bytes", r.sent_bytes[g]},
                       {"received_bytes", r.received_bytes[g]}, {"time_us", r.rank_time_s[g] * 1e6}});
    }
    summary["ranks"] = ranks;
    util::write_file_atomic(dir->file("summary.json"), summary.dump(2) + "\n");
    config::Json resolved = config::Json::object();
    resolved["machine"] = config::to_json(m);
    resolved["machine_file"] = machine.file.string();
    resolved["collective"] = {{"op", o.op}, {"bytes", o.bytes}, {"traffic", o.traffic},
                              {"gpus", n}, {"nodes", o.nodes}, {"algorithm", o.algorithm},
                              {"message_bytes", o.message_bytes}};
    util::write_file_atomic(dir->file("config.json"), resolved.dump(2) + "\n");
    dir->commit();
  }
  result.exit_code = kExitOk;
}

}  // namespace

void add_collective_command(CLI::App& app, CommandResult& result) {
  auto o = std::make_shared<CollectiveOpts>();
  auto* c = app.add_subcommand(
      "collective",
      "Time one all-to-all or all-gather on a machine's interconnect (analytical model, "
      "docs/interconnect.md); sizes follow nccl-tests: --bytes is what each GPU sends in all "
      "(all_to_all, its own slice included) or gathers (all_gather)");
  c->add_option("-m,--machine", o->machine, "machine name (workloads/machines) or YAML file")->required();
  c->add_option("--op", o->op, "all_to_all or all_gather")->required();
  c->add_option("--bytes", o->bytes, "size per GPU, nccl-tests' convention (e.g. 64MiB or 1048576 bytes)");
  c->add_option("--traffic", o->traffic,
                "all_to_all only: CSV of --gpus rows x --gpus byte counts (row sends to column), "
                "instead of --bytes");
  c->add_option("--gpus", o->gpus, "GPUs taking part (all nodes together)")->check(CLI::Range(2u, 65536u));
  c->add_option("--nodes", o->nodes, "nodes they are spread over, evenly")->check(CLI::Range(1u, 65536u));
  c->add_option("--algorithm", o->algorithm, "direct (pairwise, one step) or ring (n - 1 steps)");
  c->add_option("--message-bytes", o->message_bytes,
                "largest message of the protocol (each costs interconnect.message_overhead); "
                "default: one message per peer per step");
  c->add_option("-o,--output", o->output, "folder for summary.json (per-rank figures) and config.json");
  c->add_flag("--force", o->force, "replace an existing output folder");
  c->add_flag("-q,--quiet", o->quiet, "print nothing on success");
  c->callback([o, &result] { run_collective(*o, result); });
}

}  // namespace tdmsim::cli
