#include "sim/net/collective.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <fmt/core.h>

namespace tdmsim::net {
namespace {

double seconds(units::Duration d) { return static_cast<double>(d.ps) * 1e-12; }
double bytes_per_s(units::Bandwidth b) { return static_cast<double>(b.bytes_per_s); }

// The directed resources of one collective and the bytes each carries.
class Loads {
 public:
  Loads(const InterconnectSpec& ic, const Placement& where)
      : ic_(ic),
        n_(where.gpus),
        per_node_(where.gpus / where.nodes),
        link_(ic.topology == ScaleUpTopology::full_mesh ? std::size_t{n_} * n_ : 0, 0.0),
        port_out_(n_, 0.0),
        port_in_(n_, 0.0),
        nic_out_(n_, 0.0),
        nic_in_(n_, 0.0) {}

  bool same_node(std::size_t a, std::size_t b) const { return a / per_node_ == b / per_node_; }

  // One hop of `bytes` from GPU s to GPU d (s != d).
  void add(std::size_t s, std::size_t d, double bytes) {
    if (bytes <= 0) return;
    if (!same_node(s, d)) {
      nic_out_[s] += bytes;
      nic_in_[d] += bytes;
      crosses_nodes_ = true;
    } else if (ic_.topology == ScaleUpTopology::full_mesh) {
      link_[s * n_ + d] += bytes;
    } else {
      port_out_[s] += bytes;
      port_in_[d] += bytes;
    }
  }

  bool crosses_nodes() const { return crosses_nodes_; }

  // Effective bandwidths (bytes/s) of each resource kind.
  double mesh_pair_bw() const {
    return ic_.links_per_peer() * bytes_per_s(ic_.link_bandwidth) * ic_.link_efficiency;
  }
  double port_bw() const {
    return ic_.links_per_gpu * bytes_per_s(ic_.link_bandwidth) * ic_.link_efficiency;
  }
  double nic_bw() const {
    return ic_.nic ? bytes_per_s(ic_.nic->bandwidth) * ic_.nic->efficiency : 0.0;
  }

  // The slowest resource: its serialisation time, name and bytes (named only
  // once, for the winner: a full mesh of n GPUs has n * n candidates).
  void bottleneck(CollectiveResult& r) const {
    const char* kind = nullptr;
    std::size_t at_s = 0, at_d = 0;
    const auto consider = [&](double bytes, double bw, const char* what, std::size_t s,
                              std::size_t d) {
      if (bytes <= 0) return;
      const double t = bytes / bw;
      if (t > r.bandwidth_s) {
        r.bandwidth_s = t;
        r.bottleneck_bytes = bytes;
        kind = what;
        at_s = s;
        at_d = d;
      }
    };
    for (std::size_t s = 0; s < n_; ++s) {
      for (std::size_t d = 0; !link_.empty() && d < n_; ++d) {
        consider(link_[s * n_ + d], mesh_pair_bw(), "link", s, d);
      }
      consider(port_out_[s], port_bw(), "port egress", s, s);
      consider(port_in_[s], port_bw(), "port ingress", s, s);
      consider(nic_out_[s], nic_bw(), "nic egress", s, s);
      consider(nic_in_[s], nic_bw(), "nic ingress", s, s);
    }
    if (kind == nullptr) return;
    const std::string_view k(kind);
    if (k == "link") {
      r.bottleneck = fmt::format("link gpu[{}]->gpu[{}]", at_s, at_d);
    } else {
      const auto space = k.find(' ');
      r.bottleneck = fmt::format("{} gpu[{}] {}", k.substr(0, space), at_s, k.substr(space + 1));
    }
  }

  // The serialisation time of the resources GPU g owns (its outgoing and
  // incoming links, its port, its NIC).
  double own_time(std::size_t g) const {
    double t = 0;
    if (!link_.empty()) {
      for (std::size_t o = 0; o < n_; ++o) {
        t = std::max({t, link_[g * n_ + o] / mesh_pair_bw(), link_[o * n_ + g] / mesh_pair_bw()});
      }
    }
    t = std::max({t, port_out_[g] / port_bw(), port_in_[g] / port_bw()});
    if (nic_bw() > 0) t = std::max({t, nic_out_[g] / nic_bw(), nic_in_[g] / nic_bw()});
    return t;
  }

 private:
  const InterconnectSpec& ic_;
  std::size_t n_;
  std::size_t per_node_;
  std::vector<double> link_;  // full mesh: n x n directed link bundles
  std::vector<double> port_out_, port_in_, nic_out_, nic_in_;
  bool crosses_nodes_ = false;
};

// Messages of one transfer of `bytes`.
std::uint64_t messages_for(double bytes, double message_bytes) {
  if (bytes <= 0) return 0;
  if (message_bytes <= 0) return 1;
  return static_cast<std::uint64_t>(std::ceil(bytes / message_bytes));
}

void check_placement(const InterconnectSpec& ic, const Placement& w) {
  if (w.gpus < 2) throw std::invalid_argument("a collective needs at least 2 GPUs");
  if (w.nodes < 1 || w.gpus % w.nodes != 0) {
    throw std::invalid_argument(
        fmt::format("{} GPUs do not split evenly over {} nodes", w.gpus, w.nodes));
  }
  const std::uint32_t per_node = w.gpus / w.nodes;
  if (per_node > ic.gpus_per_node) {
    throw std::invalid_argument(fmt::format(
        "{} GPUs per node exceed the machine's interconnect.gpus_per_node ({}): use more nodes",
        per_node, ic.gpus_per_node));
  }
  if (w.nodes > 1 && !ic.nic) {
    throw std::invalid_argument(
        "the machine's interconnect has no nic: section, so it cannot span several nodes");
  }
}

// Latency, overhead and the per-rank times, once the loads are in.
CollectiveResult finish(const InterconnectSpec& ic, const Loads& loads, std::uint32_t steps,
                        const std::vector<std::uint64_t>& messages,
                        std::vector<double> sent, std::vector<double> received) {
  CollectiveResult r;
  r.steps = steps;
  loads.bottleneck(r);
  const std::uint64_t most = *std::max_element(messages.begin(), messages.end());
  if (most > 0) {
    double step_latency = seconds(ic.link_latency);
    if (loads.crosses_nodes()) step_latency = std::max(step_latency, seconds(ic.nic->latency));
    r.latency_s = steps * step_latency;
    r.overhead_s = static_cast<double>(most) * seconds(ic.message_overhead);
  } else {
    r.steps = 0;
  }
  r.time_s = r.bandwidth_s + r.latency_s + r.overhead_s;
  r.rank_time_s.resize(sent.size());
  for (std::size_t g = 0; g < sent.size(); ++g) {
    r.rank_time_s[g] = messages[g] == 0 ? 0.0
                                        : loads.own_time(g) + r.latency_s +
                                              static_cast<double>(messages[g]) * seconds(ic.message_overhead);
  }
  r.sent_bytes = std::move(sent);
  r.received_bytes = std::move(received);
  return r;
}

}  // namespace

std::string_view name(CollectiveOp op) {
  return op == CollectiveOp::all_to_all ? "all_to_all" : "all_gather";
}
std::string_view name(Algorithm a) { return a == Algorithm::direct ? "direct" : "ring"; }

bool parse(std::string_view text, CollectiveOp& op) {
  if (text == "all_to_all") op = CollectiveOp::all_to_all;
  else if (text == "all_gather") op = CollectiveOp::all_gather;
  else return false;
  return true;
}
bool parse(std::string_view text, Algorithm& a) {
  if (text == "direct") a = Algorithm::direct;
  else if (text == "ring") a = Algorithm::ring;
  else return false;
  return true;
}

TrafficMatrix TrafficMatrix::uniform(std::size_t gpus, double bytes_per_pair) {
  TrafficMatrix m(gpus);
  for (std::size_t s = 0; s < gpus; ++s) {
    for (std::size_t d = 0; d < gpus; ++d) m.at(s, d) = bytes_per_pair;
  }
  return m;
}

double TrafficMatrix::sent(std::size_t src) const {
  double t = 0;
  for (std::size_t d = 0; d < n_; ++d) t += d == src ? 0.0 : at(src, d);
  return t;
}

double TrafficMatrix::received(std::size_t dst) const {
  double t = 0;
  for (std::size_t s = 0; s < n_; ++s) t += s == dst ? 0.0 : at(s, dst);
  return t;
}

CollectiveResult all_to_all(const InterconnectSpec& ic, const Placement& where,
                            const TrafficMatrix& traffic, Algorithm algorithm,
                            double message_bytes) {
  check_placement(ic, where);
  const std::size_t n = where.gpus;
  if (traffic.gpus() != n) {
    throw std::invalid_argument(fmt::format("traffic matrix is {0}x{0} for {1} GPUs",
                                            traffic.gpus(), n));
  }
  Loads loads(ic, where);
  std::vector<std::uint64_t> messages(n, 0);
  std::vector<double> sent(n), received(n);
  for (std::size_t g = 0; g < n; ++g) {
    sent[g] = traffic.sent(g);
    received[g] = traffic.received(g);
  }
  if (algorithm == Algorithm::direct) {
    for (std::size_t s = 0; s < n; ++s) {
      for (std::size_t d = 0; d < n; ++d) {
        if (s == d || traffic.at(s, d) <= 0) continue;
        loads.add(s, d, traffic.at(s, d));
        messages[s] += messages_for(traffic.at(s, d), message_bytes);
      }
    }
    return finish(ic, loads, 1, messages, std::move(sent), std::move(received));
  }
  // Ring: the bytes s sends to d cross hops s, s+1, ..., d-1 (mod n). A
  // difference array adds each pair to its run of hops in O(1).
  std::vector<double> diff(n + 1, 0.0);
  for (std::size_t s = 0; s < n; ++s) {
    for (std::size_t d = 0; d < n; ++d) {
      const double b = traffic.at(s, d);
      if (s == d || b <= 0) continue;
      if (s < d) {
        diff[s] += b;
        diff[d] -= b;
      } else {
        diff[s] += b;
        diff[n] -= b;
        diff[0] += b;
        diff[d] -= b;
      }
    }
  }
  // Each of the n - 1 steps a GPU sends its successor an equal share of its
  // hop's bytes (at least one message per step).
  double running = 0;
  for (std::size_t h = 0; h < n; ++h) {
    running += diff[h];
    loads.add(h, (h + 1) % n, running);
    if (running > 0) {
      messages[h] = static_cast<std::uint64_t>(n - 1) *
                    messages_for(running / static_cast<double>(n - 1), message_bytes);
    }
  }
  return finish(ic, loads, static_cast<std::uint32_t>(n - 1), messages, std::move(sent),
                std::move(received));
}

CollectiveResult all_gather(const InterconnectSpec& ic, const Placement& where,
                            double bytes_per_gpu, Algorithm algorithm, double message_bytes) {
  check_placement(ic, where);
  const std::size_t n = where.gpus;
  if (algorithm == Algorithm::direct) {
    // Pairwise: the same traffic as an all-to-all of equal slices.
    return all_to_all(ic, where, TrafficMatrix::uniform(n, bytes_per_gpu), Algorithm::direct,
                      message_bytes);
  }
  // Ring: each hop forwards the n - 1 slices that are not its successor's own.
  Loads loads(ic, where);
  const double moved = static_cast<double>(n - 1) * bytes_per_gpu;
  for (std::size_t h = 0; h < n; ++h) loads.add(h, (h + 1) % n, moved);
  std::vector<std::uint64_t> messages(
      n, static_cast<std::uint64_t>(n - 1) * messages_for(bytes_per_gpu, message_bytes));
  return finish(ic, loads, static_cast<std::uint32_t>(n - 1), messages,
                std::vector<double>(n, moved), std::vector<double>(n, moved));
}

double bus_bandwidth(double size_bytes, double time_s, std::uint32_t gpus) {
  if (time_s <= 0 || gpus == 0) return 0;
  return size_bytes / time_s * (gpus - 1) / gpus;
}

}  // namespace tdmsim::net
