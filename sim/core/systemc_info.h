// What SystemC this build links (reported by `tdmsim --version`).
#pragma once

#include <string>

namespace tdmsim::sim {

std::string systemc_version();

}  // namespace tdmsim::sim
