// `tdmsim sweep`: a sweep's points in parallel, resumable, optionally over
// MPI ranks; `tdmsim sweep-point`: one point, in a child process.
#include "apps/tdmsim/sweep_command.h"

#include <algorithm>
#include <chrono>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <iostream>
#include <iterator>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>

#include <CLI/CLI.hpp>
#include <fmt/core.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "apps/tdmsim/layer_sim.h"
#include "apps/tdmsim/output_dir.h"
#include "apps/tdmsim/sweep_inputs.h"
#include "apps/tdmsim/sweep_lock.h"
#include "apps/tdmsim/sweep_mpi.h"
#include "apps/tdmsim/sweep_results.h"
#include "apps/tdmsim/sweep_sensitivity.h"
#include "apps/tdmsim/sweep_stats.h"
#include "apps/tdmsim/sweep_worker.h"
#include "workloads/config/sweep_points.h"
#include "workloads/util/atomic_write.h"

#ifndef TDMSIM_PLOT_SCRIPT
#define TDMSIM_PLOT_SCRIPT "validation/plot_sweep.py"
#endif

namespace tdmsim::cli {
namespace {

using config::Json;

struct SweepOptions {
  std::string sweep;
  std::string output;
  int jobs = 0;  // 0: the machine's cores
  bool quiet = false;
  bool force = false;
  bool dry_run = false;
};

constexpr const char* kFormat = "tdmsim-sweep-1";

// One self-overwriting line on a terminal: bar, counts, elapsed, ETA.
class Progress {
 public:
  Progress(bool on, std::size_t total, std::string unit = "points")
      : on_(on), total_(total), unit_(std::move(unit)), t0_(std::chrono::steady_clock::now()) {
    draw();
  }
  void point_done(bool ok) {
    std::lock_guard<std::mutex> lock(mu_);
    ++done_;
    if (!ok) ++failed_;
    draw();
  }
  // (Also on the way out of an error: its message then starts a clean line.)
  ~Progress() { clear(); }
  void clear() {
    if (on_) fmt::print(stderr, "\r{:100}\r", "");
    on_ = false;
  }

 private:
  static std::string clock(double s) {
    const auto t = static_cast<long>(s + 0.5);
    return t >= 3600 ? fmt::format("{}:{:02}:{:02}", t / 3600, t / 60 % 60, t % 60)
                     : fmt::format("{:02}:{:02}", t / 60, t % 60);
  }
  void draw() {
    if (!on_) return;
    const auto now = std::chrono::steady_clock::now();
    // At most ten redraws a second (checking a point takes about a millisecond).
    if (done_ > 0 && done_ < total_ && now - last_ < std::chrono::milliseconds(100)) return;
    last_ = now;
    const double el = std::chrono::duration<double>(now - t0_).count();
    const std::size_t width = 30;
    const std::size_t fill = total_ > 0 ? done_ * width / total_ : width;
    const std::string eta = done_ > 0 && done_ < total_ ? clock(el / static_cast<double>(done_) * static_cast<double>(total_ - done_)) : "--:--";
    fmt::print(stderr, "\r[{}{}] {}/{} {}{} {} elapsed, ETA {}   ", std::string(fill, '#'),
               std::string(width - fill, '.'), done_, total_, unit_,
               failed_ > 0 ? fmt::format(" ({} failed)", failed_) : std::string(), clock(el), eta);
    std::fflush(stderr);
  }
  bool on_;
  std::size_t total_, done_ = 0, failed_ = 0;
  std::string unit_;
  std::chrono::steady_clock::time_point t0_, last_;
  std::mutex mu_;
};

// Everything the sweep command knows before running anything.
struct Prepared {
  config::ResolvedSweep sweep;
  std::vector<config::SweepPoint> points;
  std::vector<std::string> axis_columns;  // every axis but path (the path column has its value)
  // Which points the sweep has (base scenario and machine references, mode,
  // seed, every point's axis values): a folder with another is another sweep's.
  std::string definition;
  // What the results depend on: every point's inputs hash (sweep_inputs.h).
  std::string fingerprint;
  std::vector<std::string> inputs_hash;  // by point index
  std::size_t rows = 0;  // rows a complete sweep has
  // Every file the sweep reads (the sweep file and its chain, every point's
  // point_files): --force must not remove a folder that holds one.
  std::vector<fs::path> input_files;
};

Prepared prepare(const config::Loader& loader, const fs::path& file, bool progress_on) {
  Prepared p;
  p.sweep = loader.resolve_sweep(file);
  p.points = config::expand_points(p.sweep.sweep.spec);
  // Every point is resolved and checked before anything runs: on a terminal,
  // how far that has got (about a second per 1000 points).
  Progress checked(progress_on, p.points.size(), "points checked");
  const auto& spec = p.sweep.sweep.spec;
  Fnv1a def, fp;
  def.add(kFormat);
  for (const auto& s : {spec.scenario, spec.machine, std::string(config::enum_name(spec.mode)),
                        std::to_string(spec.seed), std::to_string(spec.samples)}) {
    def.add(s);
  }
  // Draws are part of which runs the sweep has; left out at 1 so that folders
  // of sweeps from before `repeat:` existed are still resumed.
  if (spec.repeat > 1) def.add("repeat=" + std::to_string(spec.repeat));
  fp.add(kFormat);
  FileHashes files;
  p.inputs_hash.resize(p.points.size());
  std::optional<std::pair<std::uint64_t, std::uint64_t>> wraps;  // (point, seed) whose draws pass 2^64 - 1
  check_all_points(loader, p.sweep, p.points,
                   [&](const config::SweepPoint& pt, const config::ResolvedPoint& r) {
                     def.add(std::to_string(pt.index));
                     for (const auto& [k, v] : config::point_values(spec, pt)) {
                       def.add(k);
                       def.add(v);
                     }
                     p.inputs_hash.at(pt.index) = point_inputs_hash(r, files);
                     if (const std::uint64_t seed = r.scenario.scenario.spec.seed;
                         !wraps && spec.repeat > 1 &&
                         seed > std::numeric_limits<std::uint64_t>::max() - (spec.repeat - 1)) {
                       wraps = std::make_pair(std::uint64_t{pt.index}, seed);
                     }
                     for (auto& f : point_files(r)) p.input_files.push_back(std::move(f));
                     fp.add(p.inputs_hash[pt.index]);
                     p.rows += r.paths.size();
                     checked.point_done(true);
                   },
                   /*check_memory=*/true);
  checked.clear();
  if (wraps) {
    const config::Location at =
        config::nearest_location(p.sweep.sweep.set_at, "repeat", {p.sweep.sweep.file.string(), 1, 1});
    throw BadInput(config::Diagnostic{at, "repeat",
                                      fmt::format("{} draws of point {} take seeds {} to seed + {}, past 2^64 - 1; "
                                                  "give its scenario a smaller seed",
                                                  spec.repeat, wraps->first, wraps->second, spec.repeat - 1)}
                       .to_string());
  }
  p.input_files.insert(p.input_files.end(), p.sweep.sweep.chain.begin(), p.sweep.sweep.chain.end());
  p.input_files.push_back(p.sweep.sweep.file);
  p.definition = def.hex();
  p.fingerprint = fp.hex();
  for (const auto& a : p.sweep.sweep.spec.axes.items) {
    const auto ref = axis_ref(a.key);
    // (A path axis's value is the path column's; a machine or model axis's,
    // as written, gets a column: two machine files may share a name.)
    if (ref && ref->target != AxisTarget::path) {
      p.axis_columns.push_back(a.key);
    }
  }
  return p;
}

Json manifest(const Prepared& p) {
  const auto& s = p.sweep.sweep.spec;
  Json axes = Json::array();
  for (const auto& a : s.axes.items) axes.push_back(a.key);
  return {{"format", kFormat},
          {"sweep", s.name},
          {"file", p.sweep.sweep.file.string()},
          {"definition", p.definition},
          {"fingerprint", p.fingerprint},
          {"mode", config::enum_name(s.mode)},
          {"seed", s.seed},
          {"repeat", s.repeat},
          {"jitter", s.jitter},
          {"points", p.points.size()},
          {"rows", p.rows},
          {"axes", axes},
          {"axis_columns", p.axis_columns}};
}

// For results.csv's `jitter` column: which points run a jitter value; none
// (no column) for a sweep without `jitter`.
std::function<bool(std::uint64_t)> jitter_column(const Prepared& p) {
  if (p.sweep.sweep.spec.jitter <= 0) return {};
  return [&p](std::uint64_t i) { return i < p.points.size() && config::jitter_point(p.sweep.sweep.spec, p.points[i]); };
}

// The name sweep.json has while a --force replacement empties its folder.
constexpr const char* kReplacingMarker = ".sweep.replacing";

// What a sweep does with an existing output folder `dir`: resumes it (the
// same sweep's), replaces it (--force, a sweep's folder), fills it (empty,
// or holding only the lock file), or refuses it (BadInput). Looks only:
// prepare_output acts on it, --dry-run reports it.
enum class OutputAction { resume, replace, fill };
OutputAction output_action(const fs::path& dir, const Prepared& p, bool force) {
  const fs::path man = dir / "sweep.json";
  const fs::path replacing = dir / kReplacingMarker;
  const auto holds_only_lock = [&] {
    for (const auto& e : fs::directory_iterator(dir)) {
      if (e.path().filename() != SweepLock::kFile) return false;
    }
    return true;
  };
  bool replace = false;
  if (fs::exists(man)) {
    std::ifstream in(man);
    const Json old = Json::parse(in, nullptr, false);
    const bool same = !old.is_discarded() && old.is_object() && old.value("definition", "") == p.definition;
    if (same) return OutputAction::resume;
    if (!force && (old.is_discarded() || !old.is_object())) {
      throw BadInput(fmt::format("output folder {}: its sweep.json cannot be read (not a JSON object: damaged or "
                                 "edited); use --force to replace the folder or choose another folder",
                                 dir.string()));
    }
    if (!force) {
      throw BadInput(fmt::format(
          "output folder {} holds results of a different sweep ({}, definition {}; this one is {}, {}); "
          "use --force to replace them or choose another folder",
          dir.string(), old.is_object() ? old.value("sweep", "?") : "?",
          old.is_object() ? old.value("definition", "?") : "?", p.sweep.sweep.spec.name, p.definition));
    }
    replace = true;
  } else if (fs::exists(replacing)) {
    if (!force) {
      throw BadInput("output folder " + dir.string() + ": an earlier --force replacement of it was interrupted (" +
                     std::string(kReplacingMarker) + "); give --force again to finish it, or choose another folder");
    }
    replace = true;
  } else if (!holds_only_lock()) {
    // Not a sweep's folder: --force does not empty a folder of the user's own.
    throw BadInput("output folder " + dir.string() +
                   " exists and holds no sweep (no sweep.json); --force replaces only a sweep's folder: "
                   "remove it yourself or choose another folder");
  }
  if (replace) {
    // A sweep's folder that also holds a file this sweep reads (its own
    // sweep file kept beside its results, a table): replacing the folder
    // would delete it before any point runs.
    if (const auto f = input_inside(dir, p.input_files)) {
      throw BadInput(fmt::format("output folder {} holds {}, which this sweep reads; --force would delete it: "
                                 "choose another folder",
                                 dir.string(), f->string()));
    }
    return OutputAction::replace;
  }
  return OutputAction::fill;
}

// Makes `dir` (created and locked by `lock`) ready: new, the same sweep's
// folder (resumed; its points whose inputs changed run again), or --force
// replacing what is there. Anything else is bad input, and the folder is left
// as it was.
void prepare_output(const fs::path& dir, const Prepared& p, bool force, bool quiet, SweepLock& lock) {
  const Json m = manifest(p);
  const fs::path man = dir / "sweep.json";
  // What a --force replacement renames sweep.json to while it empties the
  // folder: an interrupted one leaves a folder still known as a sweep's.
  const fs::path replacing = dir / kReplacingMarker;
  OutputAction action{};
  try {
    action = output_action(dir, p, force);
  } catch (...) {  // refused, or the folder could not be read: left as it was
    lock.abandon();
    throw;
  }
  if (action == OutputAction::resume) {
    if (!quiet) fmt::print(stderr, "resuming sweep {} in {}\n", p.sweep.sweep.spec.name, dir.string());
    lock.record_holder();
    remove_stale_temporaries(dir);
    // The fingerprint follows the inputs (the journal drops stale points), and
    // the name, file and columns follow the sweep file (renamed or moved, it
    // is the same sweep).
    std::ifstream in(man);
    if (Json::parse(in, nullptr, false) != m) util::write_file_atomic(man, m.dump(2) + "\n");
    return;
  }
  const bool replace = action == OutputAction::replace;
  lock.record_holder();
  remove_stale_temporaries(dir);
  if (replace) {
    // sweep.json first, renamed to the marker: from then on the folder no
    // longer claims to hold the old sweep, so an interruption leaves a folder
    // the next run refuses without --force (rather than one it would resume)
    // and replaces with it.
    if (fs::exists(man)) fs::rename(man, replacing);
    for (const auto& e : fs::directory_iterator(dir)) {
      const fs::path name = e.path().filename();
      if (name != SweepLock::kFile && name != kReplacingMarker) fs::remove_all(e.path());
    }
  }
  util::write_file_atomic(man, m.dump(2) + "\n");
  if (replace) fs::remove(replacing);
}

// One point's rows, as the journal holds them.
std::vector<Json> rows_of(const Prepared& p, const PointOutcome& o) {
  const auto& pt = p.points.at(o.point);
  Json inputs = Json::object();
  for (const auto& [k, v] : config::point_values(p.sweep.sweep.spec, pt)) inputs[k] = v;
  const Json& r = o.result;
  std::vector<Json> rows;
  for (std::size_t i = 0; i < r.at("paths").size(); ++i) {
    const Json& m = r["paths"][i];
    rows.push_back({{"point", o.point},
                    {"rows_in_point", r.at("paths").size()},
                    {"inputs_hash", r.at("inputs_hash")},
                    {"inputs", inputs},
                    {"path", m.at("path")},
                    {"scenario", r.at("scenario")},
                    {"machine", r.at("machine")},
                    {"model", r.at("model")},
                    {"tokens", r.at("tokens")},
                    {"dtype", r.at("dtype")},
                    {"layer", r.at("layer")},
                    {"metrics", m}});
    if (r.contains("repeat")) {
      // Mean and interval of this path, the point's speedup, and every draw.
      const Json& rep = r["repeat"];
      rows.back()["repeat"] = {{"n", rep.at("n")}, {"seeds", rep.at("seeds")},
                               {"total_us", rep.at("total_us").at(i)}, {"tdm_speedup", rep.at("tdm_speedup")}};
      Json draws = Json::array();
      for (const auto& d : r.at("draws")) {
        draws.push_back({{"draw", d.at("draw")}, {"seed", d.at("seed")}, {"layer", d.at("layer")},
                         {"metrics", d.at("paths").at(i)}});
      }
      rows.back()["draws"] = std::move(draws);
    }
  }
  return rows;
}


int sweep_command(const SweepOptions& o) {
  const auto wall0 = std::chrono::steady_clock::now();
  MpiSession mpi;
  const bool root = mpi.rank() == 0;
  const int jobs = o.jobs > 0 ? o.jobs : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const config::Loader loader(config::default_roots());
  const fs::path file = fs::absolute(o.sweep);
  const Prepared p = prepare(loader, file, root && !o.quiet && isatty(STDERR_FILENO) != 0);  // bad input: ConfigError on every rank alike
  const std::uint32_t repeat = p.sweep.sweep.spec.repeat;

  if (o.dry_run) {
    // With --output, the folder is checked as a run would (refused, resumed,
    // replaced), changing nothing.
    std::string output_note;
    if (root && !o.output.empty()) {
      const fs::path dir = fs::path(o.output).lexically_normal();
      std::error_code ec;
      const bool exists = fs::exists(dir, ec);
      if (ec) throw BadInput("output " + dir.string() + ": " + ec.message());
      if (!exists) {
        output_note = "a new folder";
      } else if (!fs::is_directory(dir, ec)) {
        throw BadInput("output " + dir.string() + " exists and is not a folder");
      } else {
        SweepLock::check_free(dir);  // a sweep writing there now: the run would be refused
        switch (output_action(dir, p, o.force)) {
          case OutputAction::resume: output_note = "resumes this sweep's results there"; break;
          case OutputAction::replace: output_note = "replaces the sweep there (--force)"; break;
          case OutputAction::fill: output_note = "a folder with no results"; break;
        }
      }
      output_note = fmt::format("output {}: {}\n", dir.string(), output_note);
    }
    if (root) {
      fmt::print("{}", output_note);
      fmt::print("sweep {}: {} points, {} rows, fingerprint {}{}\n", p.sweep.sweep.spec.name, p.points.size(),
                 p.rows, p.fingerprint,
                 repeat > 1 ? fmt::format("; {} routing draws each ({} runs)", repeat, p.points.size() * repeat)
                            : std::string());
      for (const auto& pt : p.points) {
        const std::string what = config::point_values_text(p.sweep.sweep.spec, pt);
        fmt::print("{:>6}  {}{}\n", pt.index, what.empty() ? "(base)" : what,
                   config::jitter_point(p.sweep.sweep.spec, pt) ? "  (jitter)" : "");
      }
    }
    return kExitOk;
  }
  if (o.output.empty()) throw BadInput("--output DIR is required (or --dry-run)");
  const fs::path dir = fs::path(o.output).lexically_normal();

  // Rank 0 prepares the folder; every rank learns whether that worked (an
  // exception on rank 0 alone would leave the others waiting).
  std::unique_ptr<SweepLock> folder_lock;  // held until the sweep returns
  std::unique_ptr<ResultsJournal> journal;
  std::string setup_error;
  int setup_code = kExitOk;
  if (root) {
    try {
      folder_lock = std::make_unique<SweepLock>(dir);
      prepare_output(dir, p, o.force, o.quiet, *folder_lock);
      // A row is current if its point's inputs are what they are now.
      journal = std::make_unique<ResultsJournal>(dir, p.axis_columns, [&p](const Json& row) {
        const auto i = row.value("point", std::uint64_t{0});
        return i < p.inputs_hash.size() && row.value("inputs_hash", "") == p.inputs_hash[i];
      }, repeat > 1, jitter_column(p));
      if (journal->stale_points() > 0 && !o.quiet) {
        fmt::print(stderr, "{} finished point(s) run again: their inputs or the tdmsim build changed since they ran\n",
                   journal->stale_points());
      }
    } catch (const BadInput& e) {
      setup_error = e.what();
      setup_code = kExitBadInput;
    } catch (const std::exception& e) {
      setup_error = e.what();
      setup_code = kExitFailure;
    }
  }
  if (const int code = mpi.broadcast(setup_code); code != kExitOk) {
    if (root && code == kExitBadInput) throw BadInput(setup_error);
    if (root) throw std::runtime_error(setup_error);
    return code;
  }

  // The work handed out is runs: run u is draw u % repeat of point u / repeat
  // (with repeat 1, run u is point u), so the draws of one point spread over
  // threads and ranks like points do.
  auto request_for = [&](std::uint64_t u) {
    const std::uint64_t i = u / repeat;
    return PointRequest{file.string(), i, p.points.at(i).choice, static_cast<std::uint32_t>(u % repeat)};
  };
  if (!root) {
    mpi_work(mpi, jobs, request_for);
    return kExitOk;
  }

  std::vector<std::uint64_t> todo;  // runs
  std::size_t todo_points = 0;
  for (const auto& pt : p.points) {
    if (journal->done().contains(pt.index)) continue;
    ++todo_points;
    for (std::uint32_t d = 0; d < repeat; ++d) todo.push_back(pt.index * repeat + d);
  }
  const std::size_t already = p.points.size() - todo_points;
  std::mutex mu;
  std::size_t cursor = 0;
  auto next_point = [&]() -> std::optional<std::uint64_t> {
    std::lock_guard<std::mutex> lock(mu);
    if (cursor == todo.size()) return std::nullopt;
    return todo[cursor++];
  };
  Progress progress(!o.quiet && isatty(STDERR_FILENO) != 0, todo.size(), repeat > 1 ? "runs" : "points");
  std::vector<PointOutcome> failures;
  std::mutex fail_mu;
  auto point_done = [&](const PointOutcome& out) {
    if (out.ok) {
      try {
        journal->append(rows_of(p, out));
        journal->note_wall_time(out.point, out.wall_s);
      } catch (const std::exception& e) {
        PointOutcome bad = out;
        bad.ok = false;
        bad.error = std::string("bad result: ") + e.what();
        std::lock_guard<std::mutex> lock(fail_mu);
        failures.push_back(bad);
      }
    } else {
      std::lock_guard<std::mutex> lock(fail_mu);
      failures.push_back(out);
    }
  };
  // A point is written once all its draws are in: merged (mean, interval,
  // every draw kept) or, if any draw failed, failed with the first failure.
  std::mutex draws_mu;
  std::map<std::uint64_t, std::vector<PointOutcome>> draws;  // points with draws in flight
  auto done = [&](const PointOutcome& out) {
    progress.point_done(out.ok);
    if (repeat == 1) return point_done(out);
    std::vector<PointOutcome> all;
    {
      std::lock_guard<std::mutex> lock(draws_mu);
      auto& got = draws[out.point];
      got.push_back(out);
      if (got.size() < repeat) return;
      all = std::move(got);
      draws.erase(out.point);
    }
    std::sort(all.begin(), all.end(), [](const PointOutcome& a, const PointOutcome& b) { return a.draw < b.draw; });
    PointOutcome merged;
    merged.point = out.point;
    merged.ok = true;
    std::vector<Json> results;
    for (const auto& d : all) {
      merged.wall_s += d.wall_s;
      if (!d.ok && merged.ok) {
        merged.ok = false;
        merged.error = fmt::format("draw {}: {}", d.draw, d.error);
      }
      results.push_back(d.result);
    }
    if (merged.ok) {
      try {
        merged.result = merge_draws(results);
      } catch (const std::exception& e) {
        merged.ok = false;
        merged.error = std::string("bad result: ") + e.what();
      }
    }
    point_done(merged);
  };
  std::signal(SIGPIPE, SIG_IGN);  // a child that dies early must not take the sweep with it
  if (mpi.size() > 1) mpi_coordinate(mpi, jobs, next_point, request_for, done);
  else run_points(jobs, [&]() -> std::optional<PointRequest> {
    if (auto i = next_point()) return request_for(*i);
    return std::nullopt;
  }, done);
  progress.clear();

  journal->finish();
  // A one-at-a-time sweep ranks its parameters once every point is in; until
  // then (or without both paths) there is no ranking, and none from before.
  bool ranked = false;
  if (p.sweep.sweep.spec.mode == SweepMode::oat) {
    if (failures.empty()) ranked = write_sensitivity(dir, p.sweep.sweep.spec);
    if (!ranked) {
      fs::remove(dir / "sensitivity.json");
      fs::remove(dir / "sensitivity.csv");
    }
  }
  std::sort(failures.begin(), failures.end(),
            [](const PointOutcome& a, const PointOutcome& b) { return a.point < b.point; });
  const fs::path failed_file = dir / "failed.jsonl";
  if (failures.empty()) {
    fs::remove(failed_file);
  } else {
    std::string text;
    for (const auto& f : failures) {
      Json inputs = Json::object();
      for (const auto& [k, v] : config::point_values(p.sweep.sweep.spec, p.points.at(f.point))) inputs[k] = v;
      text += Json{{"point", f.point}, {"inputs", inputs}, {"error", f.error}}.dump() + "\n";
    }
    util::write_file_atomic(failed_file, text);
    for (const auto& f : failures) {
      std::cerr << fmt::format("tdmsim: error: point {} failed: {}\n", f.point, f.error);
    }
  }
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  if (!o.quiet) {
    fmt::print("sweep {}: {} points ({} rows{}) in {}: {} run now, {} already done, {} failed; "
               "{:.1f} s with -j {}{}\n",
               p.sweep.sweep.spec.name, p.points.size(), p.rows,
               repeat > 1 ? fmt::format(", {} routing draws each", repeat) : std::string(), dir.string(),
               todo_points - failures.size(),
               already, failures.size(), wall, jobs,
               mpi.size() > 1 ? fmt::format(" on {} MPI ranks", mpi.size()) : std::string());
    if (ranked) {
      fmt::print("parameters ranked by their effect on the TDM speedup: {} (tdmsim plot {} --output tornado.png)\n",
                 (dir / "sensitivity.csv").string(), (dir / "sensitivity.csv").string());
    } else if (p.sweep.sweep.spec.mode == SweepMode::oat && failures.empty()) {
      // (Its jitter, if any, measured a floor for a ranking that is not written.)
      fmt::print("no sensitivity.csv: the ranking needs both paths at every point, and some point ran one "
                 "(a machine without a tdm: section, or a path axis)\n");
    }
  }
  if (!failures.empty()) {
    std::cerr << fmt::format("{} of {} points failed (see {}); re-run the same command to retry them\n",
                             failures.size(), p.points.size(), failed_file.string());
    return kExitFailure;
  }
  return kExitOk;
}

// The child: one point from stdin, its result as one JSON line on stdout.
int sweep_point_command() {
  std::string text(std::istreambuf_iterator<char>(std::cin), {});
  const Json req = Json::parse(text, nullptr, false);
  if (!req.is_object() || !req.contains("sweep") || !req["sweep"].is_string() || !req.contains("point") ||
      !req["point"].is_number_unsigned() || !req.contains("choice") || !req["choice"].is_array()) {
    // Run by `tdmsim sweep` alone, which writes the request; by hand it is a mistake.
    throw BadInput("sweep-point is tdmsim sweep's internal worker: it reads a point request (JSON with "
                   "sweep, point and choice) on stdin; run tdmsim sweep instead");
  }
  // Die with the sweep: a killed sweep leaves no simulations running.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (req.contains("parent") && ::getppid() != req["parent"].get<pid_t>()) return kExitFailure;
  // Test hook (tests/cli/sweep_checks.py): this point's process crashes, to
  // check that a crashing point fails alone.
  if (const char* crash = std::getenv("TDMSIM_TEST_CRASH_POINT");
      crash != nullptr && std::to_string(req.at("point").get<std::uint64_t>()) == crash) {
    std::abort();
  }
  const config::Loader loader(config::default_roots());
  const config::ResolvedSweep sweep = loader.resolve_sweep(req.at("sweep").get<std::string>());
  config::SweepPoint point{req.at("point").get<std::uint64_t>(),
                           req.at("choice").get<std::vector<std::uint32_t>>()};
  const auto draw = req.value("draw", 0u);
  config::Diagnostics diags;
  const auto r = config::PointResolver(loader, sweep).resolve(point, diags);
  diags.throw_if_any();
  FileHashes files;
  const std::string inputs_hash = point_inputs_hash(*r, files);  // the point's, whatever the draw
  // Draw r routes with the point's seed + r (prepare() refused a seed whose
  // draws would pass 2^64 - 1), as `tdmsim run --repeat`
  // numbers its draws: a draw is reproducible with `tdmsim run` at that seed.
  config::ResolvedScenario sc = r->scenario;
  sc.scenario.spec.seed += draw;
  Json out = {{"point", point.index},
              {"draw", draw},
              {"seed", sc.scenario.spec.seed},
              {"inputs_hash", inputs_hash},
              {"scenario", sc.scenario.spec.name},
              {"machine", sc.machine.spec.name},
              {"model", sc.model.spec.name},
              {"tokens", sc.scenario.spec.tokens},
              {"dtype", config::enum_name(sc.scenario.spec.dtype)}};
  Json sim = simulate_layer(sc, r->paths);
  out["layer"] = std::move(sim["layer"]);
  out["paths"] = std::move(sim["paths"]);
  std::cout << out.dump() << "\n" << std::flush;
  return kExitOk;
}

}  // namespace

void add_sweep_commands(CLI::App& app, CommandResult& result) {
  auto o = std::make_shared<SweepOptions>();
  auto* cmd = app.add_subcommand(
      "sweep", "Run every point of a sweep (workloads/sweeps/*.yaml) on the timing model, in parallel "
               "child processes (and over MPI ranks under mpirun); resumable: re-running the same "
               "command skips finished points (docs/sweeps.md)");
  cmd->add_option("sweep", o->sweep, "Sweep YAML file")->required();
  cmd->add_option("-o,--output", o->output,
                  "results folder: results.csv, results.jsonl, sweep.json (a folder holding this "
                  "sweep's results is resumed)");
  cmd->add_option("-j,--jobs", o->jobs, "points run at once (per MPI rank); default: the cores")
      ->check(CLI::Range(1, 4096));
  cmd->add_flag("-q,--quiet", o->quiet, "no progress bar and no summary line (errors only)");
  cmd->add_flag("--force", o->force, "replace an output folder holding something else");
  cmd->add_flag("--dry-run", o->dry_run, "validate and list the points, run nothing");
  // (Bad input propagates to main, which says it and exits 2.)
  cmd->callback([o, &result] { result.exit_code = sweep_command(*o); });

  // `tdmsim plot`: the plotting script, with every argument passed through.
  auto* plot = app.add_subcommand(
      "plot", "Plot a sweep's results.csv: tdmsim plot results.csv --x tokens --y total_us --hue path "
              "--facet model --output fig.png; or a run folder's TDM-vs-software causes as a waterfall: "
              "tdmsim plot RUN_DIR --output causes.png (runs validation/plot_sweep.py; --help there)");
  plot->prefix_command();
  plot->set_help_flag();
  plot->callback([plot, &result] {
    std::vector<std::string> args = {"python3", TDMSIM_PLOT_SCRIPT};
    for (const auto& a : plot->remaining()) args.push_back(a);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    std::fflush(stdout);
    ::setenv("TDMSIM_PLOT_PROG", "tdmsim plot", 1);  // the script's usage line names this command
    ::execvp("python3", argv.data());
    std::cerr << "tdmsim: error: cannot run python3 " << TDMSIM_PLOT_SCRIPT << ": " << std::strerror(errno) << "\n";
    result.exit_code = kExitFailure;
  });

  auto* point = app.add_subcommand("sweep-point", "internal: run one sweep point (JSON on stdin)");
  point->group("");  // hidden: the sweep command's worker
  point->callback([&result] { result.exit_code = sweep_point_command(); });
}

}  // namespace tdmsim::cli
