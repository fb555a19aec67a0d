// Batches of runs sent below the L2 (MemAccess::runs): a cache's misses and
// write-backs go on as one call carrying every run, instead of one call per
// run through the Fabric, the MALL and HBM (the TLM calls, the time
// conversions and each block's set-up per run were a third of a
// 1024-token DeepSeek-V3 layer's memory walk: 1.3 M MALL calls for 0.11 M
// L2 accesses, most of them a gathered token row each). Host-speed machinery
// beside those blocks: each block serves a batch's runs one by one, in
// order, with the same code and state as when they came one call each
// (for_each_run, mem_access.h: the reference), and folds their answers as
// the sender did (latest completion, longest unloaded round trip and wait).
// The same times, stats and later state: tests/sim/test_run_batch.cpp, and
// scripts/golden-outputs.sh. No effect on any simulated time.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "sim/core/sim_time.h"
#include "sim/mem/mem_access.h"
#include "sim/mem/run_merge.h"

namespace tdmsim::sim {

// The runs for_each_run would send, each its own access: `runs` (sorted by
// address) with touching runs merged, into `out`.
inline void merge_touching(const std::vector<ByteRun>& runs, std::vector<ByteRun>& out) {
  out.clear();
  for (const ByteRun& r : runs) append_run(out, r.addr, r.bytes);
}

// Whether no run of `runs` touches the one before it: merge_touching would
// copy them as they are (a list built by append_run, as a cache's misses
// are). Reading them costs a fraction of copying them.
inline bool touch_free(const std::vector<ByteRun>& runs) {
  for (std::size_t i = 1; i < runs.size(); ++i) {
    if (runs[i - 1].addr + runs[i - 1].bytes == runs[i].addr) return false;
  }
  return true;
}

// The access carrying `runs` (merged: merge_touching) as a batch; a lone run
// goes as a plain single-row access.
inline MemAccess batch_access(const std::vector<ByteRun>& runs, bool write, std::uint32_t die) {
  MemAccess a{runs.front().addr, static_cast<std::uint32_t>(runs.front().bytes), 1, 0, write, die};
  if (runs.size() > 1) {
    a.runs = runs.data();
    a.run_count = static_cast<std::uint32_t>(runs.size());
  }
  return a;
}

// Calls f(access) for each run of batch `a` as the single-row access it
// stands for (write and die copied in), or once with `a` when it is none.
template <class F>
void for_each_in_batch(const MemAccess& a, F f) {
  if (!a.batch()) {
    f(a);
    return;
  }
  for (std::uint32_t i = 0; i < a.run_count; ++i) {
    f(MemAccess{a.runs[i].addr, static_cast<std::uint32_t>(a.runs[i].bytes), 1, 0, a.write, a.die});
  }
}

// What a block answers for a batch: its runs' answers folded.
struct BatchAnswer {
  Tick done = 0;
  Tick unloaded = 0;
  Tick wait = 0;
  void fold(Tick d, Tick u, Tick w) {
    done = std::max(done, d);
    unloaded = std::max(unloaded, u);
    wait = std::max(wait, w);
  }
};

// Sends `runs` (sorted by address) through `port` on `socket` at `arrive`
// (global time `now`), merged and batched, with `scratch` for the merged
// runs; calls on_answer(done, unloaded, wait) once with the batch's answer
// (what the sender folds, as it would have folded each run's). No call when
// `runs` is empty. With `one_by_one`, the reference: each run sent on its own
// and answered on its own. (`runs` must stay unchanged during the call: the
// batch may point into it.)
template <class Socket, class OnAnswer>
void send_runs(MemPort& port, Socket& socket, const std::vector<ByteRun>& runs, std::vector<ByteRun>& scratch,
               bool write, std::uint32_t die, Tick arrive, Tick now, OnAnswer on_answer, bool one_by_one = false) {
  if (runs.empty()) return;
  if (one_by_one) {
    for_each_run(runs, write, die, [&](const MemAccess& m) {
      const Tick done = port.send(socket, m, arrive, now);
      on_answer(done, port.unloaded(), port.wait());
    });
    return;
  }
  // (Merged already, they go as they are: the same runs.)
  const std::vector<ByteRun>* sent = &runs;
  if (!touch_free(runs)) {
    merge_touching(runs, scratch);
    sent = &scratch;
  }
  const Tick done = port.send(socket, batch_access(*sent, write, die), arrive, now);
  on_answer(done, port.unloaded(), port.wait());
}

}  // namespace tdmsim::sim
