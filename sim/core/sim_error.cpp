#include "sim/core/sim_error.h"

#include <cstring>

#include <systemc>

namespace tdmsim::sim {

std::string report_text(const sc_core::sc_report& r) {
  const char* type = r.get_msg_type();
  const char* msg = r.get_msg();
  // E549: SystemC caught an exception leaving a process; its message is the
  // exception's what().
  if (type != nullptr && std::strcmp(type, sc_core::SC_ID_SIMULATION_UNCAUGHT_EXCEPTION_) == 0 &&
      msg != nullptr && *msg != '\0') {
    return std::string("internal error in the simulator: ") + msg;
  }
  return std::string("SystemC ") + (type != nullptr ? type : "report") +
         (msg != nullptr && *msg != '\0' ? std::string(": ") + msg : std::string());
}

Failure classify(const std::exception_ptr& e) {
  try {
    std::rethrow_exception(e);
  } catch (const NotSimulatable& x) {
    return {true, x.what()};
  } catch (const SimulationStalled& x) {
    return {false, x.what()};
  } catch (const sc_core::sc_report& x) {
    return {false, report_text(x)};
  } catch (const std::bad_alloc&) {
    return {false, kOutOfHostMemory};
  } catch (const std::exception& x) {
    return {false, x.what()};
  } catch (...) {
    return {false, "unknown internal error"};
  }
}

}  // namespace tdmsim::sim
