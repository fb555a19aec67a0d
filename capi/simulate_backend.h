// The simulate backend of the descriptor API: the emulator's output plus the
// layer's predicted time on the descriptor's machine, each path the machine
// has (software; tdm with the descriptor's policy) run on a fresh machine in a
// child process, as `tdmsim run` does.
#pragma once

#include "descriptors/api/moe_api.h"

namespace tdmsim::capi {

// The executor Context::install(Backend::simulate, ...) takes.
api::BackendOutput simulate_layer(const plan::MoePlan& plan, std::span<const float> x,
                                  const api::ForwardOptions& options);

}  // namespace tdmsim::capi
