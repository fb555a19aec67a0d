// What the host side asks of the TDM MoE unit's routing stage
// (sim/platform/tdm_router.h): run a routing launch (isa::HardwareRouting)
// to its end. The descriptor scheduler (tdm_scheduler.h) starts the layer's
// descriptors only after it: they read the task table it writes.
#pragma once

#include "isa/tile_program.h"
#include "sim/platform/dispatcher.h"

namespace tdmsim::sim {

class TdmRoutingIf {
 public:
  virtual ~TdmRoutingIf() = default;
  // Runs `k` (k.routing set) from now to its end; call from a SystemC thread.
  // The timing's launch and start are now (no host launch, no grid).
  virtual KernelTiming route(const isa::KernelLaunch& k) = 0;
};

}  // namespace tdmsim::sim
