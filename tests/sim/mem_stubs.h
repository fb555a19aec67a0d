// Test stubs around a memory block under test: a requester that drives it
// through a TLM socket, and a memory below it with a fixed latency. The clock
// is the SystemC kernel's (no CuScheduler).
#pragma once

#include <cstdint>

#include <systemc>
#include <tlm_utils/simple_initiator_socket.h>
#include <tlm_utils/simple_target_socket.h>

#include "sim/mem/mem_access.h"

namespace tdmsim::sim::test {

struct StubMemory : sc_core::sc_module {
  tlm_utils::simple_target_socket<StubMemory> target;
  Tick latency;
  std::uint64_t bytes = 0, accesses = 0;
  StubMemory(sc_core::sc_module_name n, Tick l) : sc_module(n), target("target"), latency(l) {
    target.register_b_transport(this, &StubMemory::b_transport);
  }
  void b_transport(tlm::tlm_generic_payload& p, sc_core::sc_time& delay) {
    auto* ext = p.get_extension<MemAccessExt>();
    bytes += ext->access.bytes();
    ++accesses;
    ext->unloaded = latency;  // as the fabric, MALL and HBM report their round trip
    delay += sc_core::sc_time(static_cast<double>(latency), sc_core::SC_PS);
  }
};

struct Requester : sc_core::sc_module {
  tlm_utils::simple_initiator_socket<Requester> socket;
  explicit Requester(sc_core::sc_module_name n) : sc_module(n), socket("socket") {}
  // Latency of one load arriving at `at` (global time 0: b_transport is
  // untimed, all timing is in the annotated delay).
  Tick access(std::uint64_t addr, std::uint32_t bytes, Tick at) {
    return transport(socket, MemAccess{addr, bytes, 1, 0, false, 0}, at, 0) - at;
  }
};

}  // namespace tdmsim::sim::test
