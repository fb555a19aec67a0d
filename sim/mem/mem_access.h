// What travels on the memory TLM sockets: a (possibly 2-D strided) range of
// bytes, as a tile load issues it. Carried as a tlm_generic_payload extension
// so the sockets stay standard TLM-2.0 (b_transport with annotated delay).
#pragma once

#include <cstdint>
#include <vector>

#include <tlm>

#include "sim/core/sim_time.h"

namespace tdmsim::sim {

struct MemAccess {
  std::uint64_t addr = 0;        // first byte
  std::uint32_t row_bytes = 0;   // contiguous bytes per row
  std::uint32_t rows = 1;        // rows in the access
  std::uint64_t row_stride = 0;  // bytes between row starts
  bool write = false;
  std::uint32_t die = 0;         // requesting die (XCD), for fabric routing
  // Gathered rows: row r starts at addr + gather[r] (row_stride unused).
  // Points into the issuing program, which outlives the (blocking) call.
  const std::uint64_t* gather = nullptr;
  bool atomic = false;  // a write done as an atomic read-modify-write (at L2)
  std::uint64_t bytes() const { return static_cast<std::uint64_t>(row_bytes) * rows; }
  std::uint64_t row(std::uint32_t r) const {
    return gather != nullptr ? addr + gather[r] : addr + r * row_stride;
  }
  // Whether every row starts and ends on a `line` boundary.
  bool line_aligned(std::uint64_t line) const {
    if (row_bytes % line != 0) return false;
    if (gather == nullptr) return addr % line == 0 && (rows == 1 || row_stride % line == 0);
    for (std::uint32_t r = 0; r < rows; ++r) {
      if (row(r) % line != 0) return false;
    }
    return true;
  }
};

// Line addresses (ascending) grouped into runs of consecutive lines, each as
// one single-row access: what a cache sends below for its misses and
// write-backs. `line` is the line size; `write` and `die` are copied in.
template <class F>
void for_each_run(const std::vector<std::uint64_t>& lines, std::uint64_t line, bool write,
                  std::uint32_t die, F send) {
  for (std::size_t i = 0; i < lines.size();) {
    std::size_t j = i + 1;
    while (j < lines.size() && lines[j] == lines[j - 1] + line) ++j;
    send(MemAccess{lines[i], static_cast<std::uint32_t>((j - i) * line), 1, 0, write, die});
    i = j;
  }
}

class MemAccessExt : public tlm::tlm_extension<MemAccessExt> {
 public:
  MemAccess access;
  tlm::tlm_extension_base* clone() const override { return new MemAccessExt(*this); }
  void copy_from(const tlm::tlm_extension_base& other) override {
    access = static_cast<const MemAccessExt&>(other).access;
  }
};

// One reusable payload per initiator: building a tlm_generic_payload costs an
// allocation, and memory requests are the simulator's hottest path. Not
// reentrant: each initiating block owns its own.
class MemPort {
 public:
  MemPort() {
    payload_.set_extension(&ext_);
    payload_.set_data_ptr(nullptr);  // timing only: functional data lives in the emulator
  }
  ~MemPort() { payload_.clear_extension<MemAccessExt>(); }
  MemPort(const MemPort&) = delete;
  MemPort& operator=(const MemPort&) = delete;

  // Sends `a` arriving at absolute tick `arrive` (global time `now`); returns
  // its completion time in absolute ticks.
  template <class Socket>
  std::uint64_t send(Socket& socket, const MemAccess& a, std::uint64_t arrive, std::uint64_t now) {
    ext_.access = a;
    payload_.set_command(a.write ? tlm::TLM_WRITE_COMMAND : tlm::TLM_READ_COMMAND);
    payload_.set_address(a.addr);
    payload_.set_data_length(static_cast<unsigned>(a.bytes()));
    payload_.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
    sc_core::sc_time delay = to_sc_time(arrive - now);
    socket->b_transport(payload_, delay);
    return now + delay.value();
  }

 private:
  tlm::tlm_generic_payload payload_;
  MemAccessExt ext_;
};

// Convenience for one-off requests (tests): a fresh port per call.
template <class Socket>
std::uint64_t transport(Socket& socket, const MemAccess& a, std::uint64_t arrive,
                        std::uint64_t now) {
  MemPort port;
  return port.send(socket, a, arrive, now);
}

}  // namespace tdmsim::sim
