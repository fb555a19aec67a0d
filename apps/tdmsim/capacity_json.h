// What routing.capacity_factor did to a plan's routing, as the "capacity"
// object of `tdmsim run`'s layer summary and of `tdmsim emulate`'s summary
// (one writer, so the two commands report the same counts).
#pragma once

#include <string>

#include "descriptors/plan/moe_plan.h"
#include "workloads/config/writer.h"

namespace tdmsim::cli {

config::Json capacity_summary(const plan::CapacityReport& c);

// The same counts as one line of text (for an enabled capacity only).
std::string capacity_line(const plan::CapacityReport& c);

}  // namespace tdmsim::cli
