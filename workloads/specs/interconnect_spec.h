// The GPU-to-GPU interconnect of a machine's platform: the scale-up fabric
// joining the GPUs of one node (xGMI / Infinity Fabric mesh, NVLink through
// NVSwitch, a switched scale-up fabric) and the scale-out NIC each GPU has for
// other nodes. Declared once below; read by the collective model
// (sim/net/collective.h), which says how each key is used. Every value in a
// shipped machine file carries its source; docs/calibration.md
// "Interconnect" lists them.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>

#include "workloads/config/schema.h"

namespace tdmsim {

// How the GPUs of one node are joined.
//   full_mesh: every pair of GPUs has its own direct links (MI300X / MI355X
//              8-GPU platforms); a pair's traffic uses only its own links.
//   switch:    each GPU's links go to a non-blocking switch (NVSwitch, a
//              UALink/Ethernet scale-up switch); a GPU's traffic shares its
//              port: all its links, to any peer.
enum class ScaleUpTopology { full_mesh, switch_ };

struct NicSpec {
  units::Bandwidth bandwidth{};
  units::Duration latency{};
  double efficiency{};

  template <class V>
  void visit(V& v) {
    v.param(bandwidth, "bandwidth",
            "scale-out bandwidth per GPU per direction (all of one GPU's NICs together; line rate)",
            config::Required{}, config::Min{"1GB/s"}, config::Max{"100TB/s"});
    v.param(latency, "latency",
            "one-way latency of a message between GPUs on different nodes (NIC, switch, wire)",
            config::Required{}, config::Max{"1ms"});
    v.param(efficiency, "efficiency",
            "fraction of bandwidth a large transfer sustains (headers, flow control)",
            config::Default{1.0}, config::Min{0.05}, config::Max{1.0});
  }
};

struct InterconnectSpec {
  ScaleUpTopology topology{};
  std::uint32_t gpus_per_node{};
  std::uint32_t links_per_gpu{};
  units::Bandwidth link_bandwidth{};
  double link_efficiency{};
  units::Duration link_latency{};
  units::Duration message_overhead{};
  std::optional<NicSpec> nic;

  template <class V>
  void visit(V& v) {
    v.param(topology, "topology",
            "full_mesh (each GPU pair has its own links) or switch (each GPU's links go to a "
            "non-blocking switch and its traffic shares them)",
            config::Required{});
    v.param(gpus_per_node, "gpus_per_node", "GPUs in one scale-up domain (node)",
            config::Required{}, config::Min{1u}, config::Max{1024u});
    v.param(links_per_gpu, "links_per_gpu",
            "scale-up links of one GPU (full_mesh: spread evenly over its gpus_per_node - 1 peers)",
            config::Required{}, config::Min{1u}, config::Max{1024u});
    v.param(link_bandwidth, "link_bandwidth", "bandwidth of one link per direction (line rate)",
            config::Required{}, config::Min{"1GB/s"}, config::Max{"100TB/s"});
    v.param(link_efficiency, "link_efficiency",
            "fraction of link_bandwidth a large transfer sustains (CRC, packet headers, protocol)",
            config::Default{1.0}, config::Min{0.05}, config::Max{1.0});
    v.param(link_latency, "link_latency",
            "time of one step of a collective inside a node: a message's one-way latency "
            "including the synchronisation (flag write and poll) that ends the step",
            config::Required{}, config::Max{"1ms"});
    v.param(message_overhead, "message_overhead",
            "time a GPU spends issuing each message it sends (one per peer per step, or one per "
            "protocol message when the caller gives a message size); a GPU issues its messages "
            "one after another",
            config::Default{"0ns"}, config::Max{"1ms"});
    v.section(nic, "nic", "scale-out NIC per GPU, for collectives across nodes (absent: one node only)");
  }
  // Links between one pair of GPUs in a full mesh.
  std::uint32_t links_per_peer() const {
    return gpus_per_node > 1 ? links_per_gpu / (gpus_per_node - 1) : 0;
  }
};

}  // namespace tdmsim

namespace tdmsim::config {
template <>
struct EnumTraits<ScaleUpTopology> {
  static constexpr std::array<std::pair<ScaleUpTopology, std::string_view>, 2> names{
      {{ScaleUpTopology::full_mesh, "full_mesh"}, {ScaleUpTopology::switch_, "switch"}}};
};
}  // namespace tdmsim::config
