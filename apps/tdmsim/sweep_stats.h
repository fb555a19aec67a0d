// Statistics of a sweep point's repeated routing draws (`repeat: N`): the
// mean and a 95% Student-t confidence interval, and one result made of N
// draws' results. Pure arithmetic on JSON, no simulation.
#pragma once

#include <cstdint>
#include <vector>

#include "workloads/config/writer.h"

namespace tdmsim::cli {

// The 0.975 quantile of Student's t distribution with `df` >= 1 degrees of
// freedom (12.706 for 1, 2.262 for 9, 1.984 for 100), found by bisection on
// the t CDF, which is integrated numerically (Simpson's rule): to better than
// 1e-6, the same on every machine.
double student_t_975(std::uint64_t df);

// Mean, sample standard deviation (n-1) and the 95% confidence interval of
// the mean, mean -/+ t(0.975, n-1) * sd / sqrt(n); for n = 1 the interval is
// the mean itself (sd 0: one draw says nothing about the spread).
struct MeanCi {
  std::size_t n = 0;
  double mean = 0;
  double sd = 0;
  double low = 0;
  double high = 0;
  config::Json to_json() const;
};
MeanCi mean_ci95(const std::vector<double>& v);

// The element-wise mean of JSON values of one shape (draws of one result):
// numbers that differ are averaged; anything equal in every draw (integers
// such as block_m, texts such as the bound) is kept as it is; a text or
// shape that differs is draw 0's.
config::Json mean_of(const std::vector<const config::Json*>& draws);

// One point's result from its draws' results (`tdmsim sweep-point` outputs,
// in draw order, each with "seed", "layer" and "paths"): draw 0's names,
// "layer" and every path's metrics as mean_of the draws, and
//   "repeat": {"n", "seeds", "total_us": [MeanCi per path],
//              "tdm_speedup": MeanCi of software / tdm per draw, or null}
//   "draws":  [{"draw", "seed", "layer", "paths"}]  (every draw, nothing lost).
config::Json merge_draws(const std::vector<config::Json>& draws);

}  // namespace tdmsim::cli
