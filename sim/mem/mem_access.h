// What travels on the memory TLM sockets: a (possibly 2-D strided) range of
// bytes, as a tile load issues it. Carried as a tlm_generic_payload extension
// so the sockets stay standard TLM-2.0 (b_transport with annotated delay).
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include <tlm>

#include "sim/core/sim_time.h"
#include "sim/mem/run_merge.h"  // ByteRun, append_run

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
  // A K group's main-loop tile loads (each tile is read once per workgroup
  // and streams past): the L1 passes them below without allocating.
  bool streamed = false;
  // A batch (sim/mem/run_batch.h): `run_count` single-row accesses, the runs
  // at `runs` (valid for the call), each served as if sent on its own, in
  // order, all arriving at once; answered with the latest completion and the
  // longest unloaded round trip and wait over them. Sent below the L2 only
  // (the Fabric, the MALL and HBM take them); addr and row_bytes are then
  // the first run's, and bytes() the first run's.
  const ByteRun* runs = nullptr;
  std::uint32_t run_count = 0;
  bool batch() const { return runs != nullptr; }
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

// Runs (sorted by address) sent on as single-row accesses, touching runs
// merged: what a cache sends below for its misses and write-backs. `write`
// and `die` are copied in.
template <class F>
void for_each_run(const std::vector<ByteRun>& runs, bool write, std::uint32_t die, F send) {
  for (std::size_t i = 0; i < runs.size();) {
    std::uint64_t bytes = runs[i].bytes;
    std::size_t j = i + 1;
    while (j < runs.size() && runs[j].addr == runs[i].addr + bytes) bytes += runs[j++].bytes;
    send(MemAccess{runs[i].addr, static_cast<std::uint32_t>(bytes), 1, 0, write, die});
    i = j;
  }
}

class MemAccessExt : public tlm::tlm_extension<MemAccessExt> {
 public:
  MemAccess access;
  // Response: the access's round trip with no queueing anywhere (the fixed
  // latencies on the path to where its data came from). A requester that
  // sends several loop iterations' loads as one access uses it to keep each
  // iteration no earlier than it would have been on its own.
  Tick unloaded = 0;
  // Response: how long the access waited, behind earlier reservations,
  // before its first bytes were served (the longest over its paths).
  Tick wait = 0;
  tlm::tlm_extension_base* clone() const override { return new MemAccessExt(*this); }
  void copy_from(const tlm::tlm_extension_base& other) override {
    access = static_cast<const MemAccessExt&>(other).access;
  }
};

// A block's connection to the level below: `target` called directly
// (target->transport(ext, arrive, now): the request's extension handed over,
// no payload set-up, no socket's virtual call and member-function pointer, no
// extension lookup) where the simulator connected one, else `socket` (bound
// any other way: other initiators' tests, stubs). Either way the same block
// serves the same access (MemPort::send).
template <class Socket, class Target>
struct DirectLink {
  Socket& socket;
  Target* target = nullptr;
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
    ext_.unloaded = 0;
    ext_.wait = 0;
    payload_.set_command(a.write ? tlm::TLM_WRITE_COMMAND : tlm::TLM_READ_COMMAND);
    payload_.set_address(a.addr);
    payload_.set_data_length(static_cast<unsigned>(a.bytes()));
    payload_.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
    sc_core::sc_time delay = to_sc_time(arrive - now);
    socket->b_transport(payload_, delay);
    return now + delay.value();
  }
  // Sends `a` on `link`: to its target directly where it has one (with this
  // port's extension, as the socket would carry it), else on its socket.
  template <class Socket, class Target>
  std::uint64_t send(DirectLink<Socket, Target>& link, const MemAccess& a, std::uint64_t arrive,
                     std::uint64_t now) {
    if (link.target == nullptr) [[unlikely]] return send_by_socket(link.socket, a, arrive, now);
    ext_.access = a;
    ext_.unloaded = 0;
    ext_.wait = 0;
    return link.target->transport(ext_, arrive, now);
  }
  // The last response's unloaded round trip (see MemAccessExt::unloaded).
  Tick unloaded() const { return ext_.unloaded; }
  // The last response's queueing wait (see MemAccessExt::wait).
  Tick wait() const { return ext_.wait; }

 private:
  // (Out of line: a link's socket is the rare case, kept out of the sender's hot code.)
  template <class Socket>
  [[gnu::cold, gnu::noinline]] std::uint64_t send_by_socket(Socket& socket, const MemAccess& a,
                                                            std::uint64_t arrive, std::uint64_t now) {
    return send(socket, a, arrive, now);
  }
  tlm::tlm_generic_payload payload_;
  MemAccessExt ext_;
};

// What a block that sends one request's lines on below (misses, write-
// throughs) answers its requester: the latest completion, and the longest
// unloaded round trip and queueing wait, over what it sent.
struct BelowResponse {
  Tick done = 0;
  Tick unloaded = 0;
  Tick wait = 0;
  // Sends `a` through `port` on `socket` arriving at `arrive` (global time
  // `now`), adding `extra` to its completion and unloaded round trip and
  // `queued` to its wait, and folds its response in.
  template <class Socket>
  void send(MemPort& port, Socket& socket, const MemAccess& a, Tick arrive, Tick now, Tick extra = 0,
            Tick queued = 0) {
    done = std::max(done, port.send(socket, a, arrive, now) + extra);
    unloaded = std::max(unloaded, extra + port.unloaded());
    wait = std::max(wait, queued + port.wait());
  }
  // Writes the response into the requester's payload extension and delay.
  void answer(MemAccessExt& ext, sc_core::sc_time& delay, Tick now) const {
    ext.unloaded = unloaded;
    ext.wait = wait;
    delay = to_sc_time(done - now);
  }
};

// Convenience for one-off requests (tests): a fresh port per call.
template <class Socket>
std::uint64_t transport(Socket& socket, const MemAccess& a, std::uint64_t arrive,
                        std::uint64_t now) {
  MemPort port;
  return port.send(socket, a, arrive, now);
}

}  // namespace tdmsim::sim
