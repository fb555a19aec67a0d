// What travels on the memory TLM sockets: a (possibly 2-D strided) range of
// bytes, as a tile load issues it. Carried as a tlm_generic_payload extension
// so the sockets stay standard TLM-2.0 (b_transport with annotated delay).
#pragma once

#include <cstdint>

#include <tlm>

namespace tdmsim::sim {

struct MemAccess {
  std::uint64_t addr = 0;        // first byte
  std::uint32_t row_bytes = 0;   // contiguous bytes per row
  std::uint32_t rows = 1;        // rows in the access
  std::uint64_t row_stride = 0;  // bytes between row starts
  bool write = false;
  std::uint32_t die = 0;         // requesting die (XCD), for fabric routing
  std::uint64_t bytes() const { return static_cast<std::uint64_t>(row_bytes) * rows; }
};

class MemAccessExt : public tlm::tlm_extension<MemAccessExt> {
 public:
  MemAccess access;
  tlm::tlm_extension_base* clone() const override { return new MemAccessExt(*this); }
  void copy_from(const tlm::tlm_extension_base& other) override {
    access = static_cast<const MemAccessExt&>(other).access;
  }
};

// Helpers to send an access through a socket: returns the completion time
// (absolute ticks) for an access arriving at absolute tick `arrive`.
template <class Socket>
std::uint64_t transport(Socket& socket, const MemAccess& a, std::uint64_t arrive,
                        std::uint64_t now) {
  tlm::tlm_generic_payload p;
  MemAccessExt ext;
  ext.access = a;
  p.set_extension(&ext);
  // The extension lives on this stack frame: detach it however we leave, or
  // the payload's destructor would try to free it.
  struct Detach {
    tlm::tlm_generic_payload& payload;
    ~Detach() { payload.clear_extension<MemAccessExt>(); }
  } detach{p};
  p.set_command(a.write ? tlm::TLM_WRITE_COMMAND : tlm::TLM_READ_COMMAND);
  p.set_address(a.addr);
  p.set_data_length(static_cast<unsigned>(a.bytes()));
  p.set_data_ptr(nullptr);  // timing only: functional data lives in the emulator
  sc_core::sc_time delay(static_cast<double>(arrive - now), sc_core::SC_PS);
  socket->b_transport(p, delay);
  return now + static_cast<std::uint64_t>(delay.value());
}

}  // namespace tdmsim::sim
