// Analytical time of GPU collectives (all-to-all, all-gather) on a machine's
// interconnect (workloads/specs/interconnect_spec.h). No SystemC: a
// collective is a closed-form function of its traffic, so expert-parallel
// layers can call it between simulated kernels (docs/interconnect.md).
//
// The model, in one line per term:
//   time = bandwidth + latency + overhead
//   bandwidth = max over resources r of bytes(r) / (bw(r) * efficiency(r))
//   latency   = steps * (slowest one-way latency a step uses)
//   overhead  = (most messages any one GPU issues) * message_overhead
// Resources are directed: a full mesh's link bundle s->d; a switch port's
// egress and ingress per GPU; a NIC's egress and ingress per GPU. Flows that
// share a resource add their bytes on it (contention); everything else runs in
// parallel. Assumptions, each a possible source of error:
//   * Switches (NVSwitch, the scale-out fabric) are non-blocking: only a GPU's
//     own port limits it. No congestion, adaptive-routing or incast loss.
//   * Scale-out is rail-optimised: GPU g's traffic to another node leaves
//     through g's own NIC and arrives through the receiver's own NIC; nothing
//     is forwarded over the scale-up fabric first (DeepEP's normal kernels do
//     forward; their measured figures are compared in docs/validation.md).
//   * A GPU's bytes to itself are a local copy and take no time here.
//   * Bandwidth terms overlap perfectly with each other (all links busy at
//     once); latency and per-message overhead do not overlap with transfers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "workloads/specs/interconnect_spec.h"

namespace tdmsim::net {

enum class CollectiveOp { all_to_all, all_gather };

// How the messages of a collective are scheduled.
//   direct: every GPU sends to every peer at once, one step (pairwise
//           exchange; what RCCL/NCCL all-to-all and DeepEP do).
//   ring:   n - 1 steps around the ring 0 -> 1 -> ... -> n-1 -> 0 (GPUs in
//           node-major order); each step a GPU sends one message to its
//           successor, which forwards what is not for it.
enum class Algorithm { direct, ring };

std::string_view name(CollectiveOp op);
std::string_view name(Algorithm a);
// The name's value, or false for an unknown name.
bool parse(std::string_view text, CollectiveOp& op);
bool parse(std::string_view text, Algorithm& a);

// Bytes GPU s sends to GPU d, for GPUs 0..n-1 (node = gpu / gpus_in_node).
class TrafficMatrix {
 public:
  explicit TrafficMatrix(std::size_t gpus) : n_(gpus), bytes_(gpus * gpus, 0.0) {}
  // Every GPU sends `bytes_per_pair` to every other GPU (and as much to itself).
  static TrafficMatrix uniform(std::size_t gpus, double bytes_per_pair);
  std::size_t gpus() const { return n_; }
  double& at(std::size_t src, std::size_t dst) { return bytes_[src * n_ + dst]; }
  double at(std::size_t src, std::size_t dst) const { return bytes_[src * n_ + dst]; }
  double sent(std::size_t src) const;      // row sum without the diagonal
  double received(std::size_t dst) const;  // column sum without the diagonal

 private:
  std::size_t n_;
  std::vector<double> bytes_;
};

// Where the GPUs of a collective sit: `nodes` nodes of gpus / nodes GPUs each.
struct Placement {
  std::uint32_t gpus = 8;
  std::uint32_t nodes = 1;
};

struct CollectiveResult {
  double time_s = 0;
  double bandwidth_s = 0;  // the serialised-bytes term
  double latency_s = 0;
  double overhead_s = 0;
  std::uint32_t steps = 0;
  // The resource that sets bandwidth_s, e.g. "link gpu[0]->gpu[7]",
  // "port gpu[3] ingress", "nic gpu[8] egress"; empty when nothing moves.
  std::string bottleneck;
  double bottleneck_bytes = 0;
  // Per GPU (for the expert-parallel layer's per-rank breakdown): bytes it
  // sends and receives over the interconnect, and the time it would take if
  // only its own resources (its links, port, NIC) and messages counted.
  std::vector<double> sent_bytes;
  std::vector<double> received_bytes;
  std::vector<double> rank_time_s;
};

// Throws std::invalid_argument (message for the user) when the placement does
// not fit the interconnect: GPUs not split evenly over nodes, more GPUs per
// node than interconnect.gpus_per_node, several nodes without a `nic:`, or a
// matrix of another size.
//
// `message_bytes` is the protocol's largest message: a transfer of b bytes is
// ceil(b / message_bytes) messages, each costing interconnect.message_overhead
// at its sender (DeepEP's low-latency kernels send one message per token and
// expert). 0: one message per peer per step (NCCL/RCCL bulk transfers).
CollectiveResult all_to_all(const InterconnectSpec& ic, const Placement& where,
                            const TrafficMatrix& traffic, Algorithm algorithm,
                            double message_bytes = 0);

// Every GPU contributes `bytes_per_gpu`; every GPU ends with all of them.
CollectiveResult all_gather(const InterconnectSpec& ic, const Placement& where,
                            double bytes_per_gpu, Algorithm algorithm, double message_bytes = 0);

// The nccl-tests / rccl-tests conventions, so figures compare directly:
// `size` is the bytes each GPU sends including its own slice (all-to-all) or
// the gathered output (all-gather); algbw = size / time; busbw = algbw *
// (n - 1) / n for both operations.
double bus_bandwidth(double size_bytes, double time_s, std::uint32_t gpus);

}  // namespace tdmsim::net
