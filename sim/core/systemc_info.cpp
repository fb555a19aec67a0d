#include "sim/core/systemc_info.h"

#include <systemc>

namespace tdmsim::sim {

std::string systemc_version() { return sc_core::sc_release(); }

}  // namespace tdmsim::sim
