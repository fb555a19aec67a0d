#include "apps/tdmsim/ep_mpi.h"

#include <exception>
#include <iostream>
#include <limits>
#include <optional>
#include <stdexcept>
#include <system_error>

#include <fmt/core.h>

#include "apps/tdmsim/config_commands.h"
#include "apps/tdmsim/output_dir.h"
#include "sim/core/sim_error.h"
#include "workloads/config/diagnostics.h"

namespace tdmsim::cli {
namespace {

using config::Json;

std::string to_bytes(const Json& j) {
  const std::vector<std::uint8_t> b = Json::to_cbor(j);
  return {b.begin(), b.end()};
}

Json from_bytes(const std::string& s) {
  return Json::from_cbor(std::vector<std::uint8_t>(s.begin(), s.end()));
}

}  // namespace

int ep_rank_of_job(std::uint32_t job, int ranks) { return static_cast<int>(job % static_cast<std::uint32_t>(ranks)); }

RankOutcome run_guarded(const std::function<std::string()>& step) {
  RankOutcome o;
  try {
    o.payload = step();
    return o;
  } catch (const BadInput& e) {
    o = {kExitBadInput, std::string("tdmsim: error: ") + e.what(), {}};  // as main prints it
  } catch (const config::ConfigError& e) {
    o = {kExitBadInput, e.what(), {}};  // as main prints it
  } catch (const std::system_error& e) {
    o = {kExitFailure, std::string("tdmsim: error: ") + e.what(), {}};
  } catch (...) {
    const sim::Failure f = sim::classify(std::current_exception());
    o = {f.bad_input ? kExitBadInput : kExitFailure, "tdmsim: error: " + f.message, {}};
  }
  return o;
}

int settle(const MpiSession& mpi, const RankOutcome& mine, std::vector<std::string>* payloads) {
  Json j = {{"code", mine.code}, {"message", mine.message},
            {"payload", Json::binary(std::vector<std::uint8_t>(mine.payload.begin(), mine.payload.end()))}};
  std::string text = to_bytes(j);
  if (text.size() > static_cast<std::size_t>(std::numeric_limits<int>::max())) {
    text = to_bytes({{"code", kExitFailure},
                     {"message", fmt::format("tdmsim: error: rank {}'s results are over 2 GiB, more than one MPI "
                                             "message takes; use more ranks",
                                             mpi.rank())},
                     {"payload", Json::binary(std::vector<std::uint8_t>{})}});
  }
  const std::vector<std::string> all = mpi.gather(text);
  int code = kExitOk;
  if (mpi.rank() == 0) {
    std::vector<std::string> got;
    for (const auto& t : all) {
      Json o = from_bytes(t);
      if (code == kExitOk && o["code"].get<int>() != kExitOk) {
        code = o["code"].get<int>();
        if (const auto msg = o["message"].get<std::string>(); !msg.empty()) std::cerr << msg << "\n";
      }
      const auto& b = o["payload"].get_binary();
      got.emplace_back(b.begin(), b.end());
    }
    if (payloads != nullptr && code == kExitOk) *payloads = std::move(got);
  }
  return mpi.broadcast(code);
}

int simulate_ep_gpus_on_ranks(const MpiSession& mpi, const config::ResolvedScenario& sc, const EpSetup& setup,
                              const std::vector<std::string>& paths, std::vector<std::string>* payloads) {
  const RankOutcome mine = run_guarded([&] {
    Json runs = Json::array();
    for (std::size_t i = 0; i < paths.size(); ++i) {
      for (std::uint32_t j = 0; j < ep_jobs(setup); ++j) {
        if (ep_rank_of_job(j, mpi.size()) != mpi.rank()) continue;
        runs.push_back({{"path", paths[i]}, {"job", j}, {"run", path_run_to_json(run_ep_job(sc, setup, j, paths[i]))}});
      }
    }
    return to_bytes(runs);
  });
  return settle(mpi, mine, payloads);
}

std::vector<EpPathRun> ep_paths_from_ranks(const config::ResolvedScenario& sc, const EpSetup& setup,
                                           const std::vector<std::string>& paths,
                                           const std::vector<std::string>& payloads, const sim::SimOptions& opts) {
  const std::uint32_t jobs = ep_jobs(setup);
  std::vector<std::vector<std::optional<PathRun>>> got(paths.size(), std::vector<std::optional<PathRun>>(jobs));
  for (const auto& payload : payloads) {
    Json runs = from_bytes(payload);
    for (auto& r : runs) {
      const auto path = r.at("path").get<std::string>();
      const auto j = r.at("job").get<std::uint32_t>();
      std::size_t i = 0;
      while (i < paths.size() && paths[i] != path) ++i;
      if (i == paths.size() || j >= jobs || got[i][j].has_value()) {
        throw std::logic_error(fmt::format("an MPI rank sent an unexpected run: job {} of the {} path", j, path));
      }
      got[i][j] = path_run_from_json(r.at("run"));
    }
  }
  std::vector<EpPathRun> out;
  for (std::size_t i = 0; i < paths.size(); ++i) {
    std::vector<PathRun> runs;
    for (std::uint32_t j = 0; j < jobs; ++j) {
      if (!got[i][j]) throw std::logic_error(fmt::format("no MPI rank sent job {} of the {} path", j, paths[i]));
      runs.push_back(std::move(*got[i][j]));
    }
    out.push_back(assemble_ep_jobs(sc, setup, paths[i], std::move(runs), opts));
  }
  return out;
}

}  // namespace tdmsim::cli
