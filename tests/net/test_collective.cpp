// The collective model (sim/net/collective.h): its invariants, closed forms
// on hand-made interconnects, and the shipped machines' interconnect sections.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <stdexcept>

#include "sim/net/collective.h"
#include "workloads/config/loader.h"
#include "workloads/config/schema.h"

namespace tdmsim::net {
namespace {

const std::filesystem::path kWorkloads = std::filesystem::path(TDMSIM_SOURCE_DIR) / "workloads";

// Round numbers so the closed forms are easy to read: 10 GB/s per link,
// 1 us per step, 100 ns per message.
InterconnectSpec mesh(std::uint32_t gpus = 8, std::uint32_t links_per_peer = 1) {
  auto ic = config::defaults<InterconnectSpec>();
  ic.topology = ScaleUpTopology::full_mesh;
  ic.gpus_per_node = gpus;
  ic.links_per_gpu = links_per_peer * (gpus - 1);
  ic.link_bandwidth = units::Bandwidth{10'000'000'000};
  ic.link_efficiency = 1.0;
  ic.link_latency = units::Duration{1'000'000};
  ic.message_overhead = units::Duration{100'000};
  return ic;
}

InterconnectSpec switched(std::uint32_t gpus = 8, std::uint32_t links = 7) {
  auto ic = mesh(gpus);
  ic.topology = ScaleUpTopology::switch_;
  ic.links_per_gpu = links;
  return ic;
}

InterconnectSpec with_nic(InterconnectSpec ic) {
  NicSpec nic;
  nic.bandwidth = units::Bandwidth{5'000'000'000};
  nic.latency = units::Duration{4'000'000};
  nic.efficiency = 1.0;
  ic.nic = nic;
  return ic;
}

constexpr double kUs = 1e-6;

}  // namespace

TEST_CASE("uniform all-to-all on a full mesh matches the closed form") {
  const auto ic = mesh();
  const double per_pair = 1e6;  // 1 MB to each peer
  const auto r = all_to_all(ic, {8, 1}, TrafficMatrix::uniform(8, per_pair), Algorithm::direct);
  // Each pair has its own 10 GB/s link: 100 us, one step, 7 messages per GPU.
  CHECK(r.bandwidth_s == Approx(per_pair / 10e9));
  CHECK(r.latency_s == Approx(1 * kUs));
  CHECK(r.overhead_s == Approx(7 * 0.1 * kUs));
  CHECK(r.time_s == Approx(100 * kUs + 1 * kUs + 0.7 * kUs));
  CHECK(r.steps == 1);
  CHECK(r.bottleneck.rfind("link gpu[", 0) == 0);
  CHECK(r.sent_bytes[3] == Approx(7 * per_pair));
  CHECK(r.rank_time_s[3] == Approx(r.time_s));
  // nccl-tests' size is 8 MB (own slice included); busbw = algbw * 7/8.
  CHECK(bus_bandwidth(8 * per_pair, r.time_s, 8) == Approx(8e6 / r.time_s * 7 / 8));
}

TEST_CASE("uniform all-to-all through a switch shares each GPU's port") {
  const auto ic = switched();  // 7 links x 10 GB/s = 70 GB/s per port
  const double per_pair = 1e6;
  const auto r = all_to_all(ic, {8, 1}, TrafficMatrix::uniform(8, per_pair), Algorithm::direct);
  CHECK(r.bandwidth_s == Approx(7 * per_pair / 70e9));
  CHECK(r.bottleneck.rfind("port gpu[", 0) == 0);
  // The same bytes on a mesh with the same per-GPU bandwidth take as long.
  const auto m = all_to_all(mesh(), {8, 1}, TrafficMatrix::uniform(8, per_pair), Algorithm::direct);
  CHECK(m.bandwidth_s == Approx(r.bandwidth_s));
}

TEST_CASE("link efficiency scales the bandwidth term only") {
  auto ic = mesh();
  const auto full = all_to_all(ic, {8, 1}, TrafficMatrix::uniform(8, 1e6), Algorithm::direct);
  ic.link_efficiency = 0.5;
  const auto half = all_to_all(ic, {8, 1}, TrafficMatrix::uniform(8, 1e6), Algorithm::direct);
  CHECK(half.bandwidth_s == Approx(2 * full.bandwidth_s));
  CHECK(half.latency_s == Approx(full.latency_s));
}

TEST_CASE("more bytes never make a collective faster") {
  for (const auto& ic : {mesh(), switched(), with_nic(switched())}) {
    for (const auto algorithm : {Algorithm::direct, Algorithm::ring}) {
      const std::uint32_t nodes = ic.nic ? 2 : 1;
      const Placement where{8, nodes};
      double last_a2a = 0, last_ag = 0;
      for (double bytes : {0.0, 1.0, 1e3, 6e4, 1e6, 3e7, 1e9}) {
        const double a2a = all_to_all(ic, where, TrafficMatrix::uniform(8, bytes), algorithm).time_s;
        const double ag = all_gather(ic, where, bytes, algorithm).time_s;
        CHECK(a2a >= last_a2a);
        CHECK(ag >= last_ag);
        last_a2a = a2a;
        last_ag = ag;
      }
      // One more byte on one pair of a non-uniform matrix never helps either.
      auto t = TrafficMatrix::uniform(8, 1e5);
      const double before = all_to_all(ic, where, t, algorithm).time_s;
      t.at(2, 5) += 1e5;
      CHECK(all_to_all(ic, where, t, algorithm).time_s >= before);
    }
  }
}

TEST_CASE("a hot destination binds the all-to-all") {
  // Every GPU sends 1 MB to each peer, and 8 MB to GPU 0.
  auto t = TrafficMatrix::uniform(8, 1e6);
  for (std::size_t s = 1; s < 8; ++s) t.at(s, 0) = 8e6;
  SECTION("switch: GPU 0's ingress port carries 7 x 8 MB") {
    const auto r = all_to_all(switched(), {8, 1}, t, Algorithm::direct);
    CHECK(r.bottleneck == "port gpu[0] ingress");
    CHECK(r.bottleneck_bytes == Approx(56e6));
    CHECK(r.bandwidth_s == Approx(56e6 / 70e9));
    // GPU 0 is the slowest rank; the others only wait on their own port.
    CHECK(r.rank_time_s[0] == Approx(r.time_s));
    CHECK(r.rank_time_s[3] < r.time_s);
    CHECK(r.received_bytes[0] == Approx(56e6));
  }
  SECTION("full mesh: each link into GPU 0 carries 8 MB") {
    const auto r = all_to_all(mesh(), {8, 1}, t, Algorithm::direct);
    CHECK(r.bottleneck_bytes == Approx(8e6));
    CHECK(r.bandwidth_s == Approx(8e6 / 10e9));
    CHECK(r.bottleneck.find("->gpu[0]") != std::string::npos);
  }
}

TEST_CASE("ring against direct: the known cases") {
  const double chunk = 1e6;
  SECTION("all-gather on a full mesh: the ring uses one link of seven") {
    const auto direct = all_gather(mesh(), {8, 1}, chunk, Algorithm::direct);
    const auto ring = all_gather(mesh(), {8, 1}, chunk, Algorithm::ring);
    CHECK(direct.bandwidth_s == Approx(chunk / 10e9));
    CHECK(ring.bandwidth_s == Approx(7 * chunk / 10e9));
    CHECK(ring.steps == 7);
    CHECK(ring.latency_s == Approx(7 * kUs));
    CHECK(ring.overhead_s == Approx(7 * 0.1 * kUs));
  }
  SECTION("all-gather through a switch: same bytes per port, six more steps") {
    const auto direct = all_gather(switched(), {8, 1}, chunk, Algorithm::direct);
    const auto ring = all_gather(switched(), {8, 1}, chunk, Algorithm::ring);
    CHECK(ring.bandwidth_s == Approx(direct.bandwidth_s));
    CHECK(ring.latency_s - direct.latency_s == Approx(6 * kUs));
  }
  SECTION("all-to-all on a ring forwards: hop i carries every pair that passes it") {
    // Uniform p per pair over n GPUs: each hop carries p * n(n-1)/2.
    const auto ring = all_to_all(switched(), {8, 1}, TrafficMatrix::uniform(8, chunk), Algorithm::ring);
    CHECK(ring.bottleneck_bytes == Approx(chunk * 8 * 7 / 2));
    const auto direct = all_to_all(switched(), {8, 1}, TrafficMatrix::uniform(8, chunk), Algorithm::direct);
    CHECK(ring.bandwidth_s == Approx(direct.bandwidth_s * 4));
  }
  SECTION("one pair only: the ring carries it over every hop between them") {
    TrafficMatrix t(8);
    t.at(6, 1) = chunk;  // 6 -> 7 -> 0 -> 1: three hops, wrapping
    const auto r = all_to_all(switched(), {8, 1}, t, Algorithm::ring);
    CHECK(r.bottleneck_bytes == Approx(chunk));
    CHECK(r.sent_bytes[6] == Approx(chunk));
  }
}

TEST_CASE("across nodes the NIC carries the inter-node bytes") {
  const auto ic = with_nic(switched());  // NIC 5 GB/s per GPU, port 70 GB/s
  const double per_pair = 1e6;
  const auto r = all_to_all(ic, {16, 2}, TrafficMatrix::uniform(16, per_pair), Algorithm::direct);
  // Each GPU sends 8 MB to the other node through its own NIC.
  CHECK(r.bottleneck.rfind("nic gpu[", 0) == 0);
  CHECK(r.bottleneck_bytes == Approx(8 * per_pair));
  CHECK(r.bandwidth_s == Approx(8 * per_pair / 5e9));
  CHECK(r.latency_s == Approx(4 * kUs));  // the NIC's latency, the slower of the two
  // nccl-tests' rule for 2 nodes (NVIDIA/nccl-tests issue 130): half the traffic
  // crosses, so algbw is twice the NIC bandwidth (bandwidth term only).
  CHECK(16 * per_pair / r.bandwidth_s == Approx(2 * 5e9));
  // One node's worth of GPUs on one node never touches the NIC.
  const auto one = all_to_all(ic, {8, 1}, TrafficMatrix::uniform(8, per_pair), Algorithm::direct);
  CHECK(one.bottleneck.rfind("port", 0) == 0);
  CHECK(one.latency_s == Approx(1 * kUs));
}

TEST_CASE("message size splits transfers into messages that each cost overhead") {
  const auto ic = mesh();
  const auto bulk = all_to_all(ic, {8, 1}, TrafficMatrix::uniform(8, 1e6), Algorithm::direct);
  const auto small = all_to_all(ic, {8, 1}, TrafficMatrix::uniform(8, 1e6), Algorithm::direct, 1e4);
  CHECK(bulk.overhead_s == Approx(7 * 0.1 * kUs));
  CHECK(small.overhead_s == Approx(7 * 100 * 0.1 * kUs));
  CHECK(small.bandwidth_s == Approx(bulk.bandwidth_s));
}

TEST_CASE("placements the interconnect cannot hold are refused") {
  CHECK_THROWS_AS(all_to_all(mesh(), {16, 1}, TrafficMatrix::uniform(16, 1), Algorithm::direct),
                  std::invalid_argument);  // 16 GPUs on an 8-GPU node
  CHECK_THROWS_AS(all_to_all(mesh(), {16, 2}, TrafficMatrix::uniform(16, 1), Algorithm::direct),
                  std::invalid_argument);  // two nodes, no NIC
  CHECK_THROWS_AS(all_gather(mesh(), {9, 2}, 1, Algorithm::direct), std::invalid_argument);
  CHECK_THROWS_AS(all_to_all(mesh(), {8, 1}, TrafficMatrix::uniform(4, 1), Algorithm::direct),
                  std::invalid_argument);
  CHECK_THROWS_AS(all_gather(mesh(), {1, 1}, 1, Algorithm::direct), std::invalid_argument);
}

TEST_CASE("nothing to send takes no time") {
  const auto r = all_to_all(mesh(), {8, 1}, TrafficMatrix(8), Algorithm::direct);
  CHECK(r.time_s == 0);
  CHECK(r.bottleneck.empty());
  CHECK(all_gather(mesh(), {8, 1}, 0, Algorithm::ring).time_s == 0);
}

TEST_CASE("every shipped machine carries an interconnect the model accepts") {
  const config::Loader loader({kWorkloads});
  for (const char* name : {"h200", "mi300x", "mi325x", "mi355x", "mi455x", "mi500x-tdm"}) {
    INFO(name);
    const auto m = loader.machine(kWorkloads / "machines" / (std::string(name) + ".yaml")).spec;
    REQUIRE(m.interconnect.has_value());
    REQUIRE(m.interconnect->nic.has_value());
    const auto& ic = *m.interconnect;
    const std::uint32_t n = std::min<std::uint32_t>(ic.gpus_per_node, 8);
    const auto r = all_to_all(ic, {n, 1}, TrafficMatrix::uniform(n, 64e6), Algorithm::direct);
    // The per-GPU busbw of a large all-to-all stays under the line rate.
    const double line = static_cast<double>(ic.link_bandwidth.bytes_per_s) *
                        (ic.topology == ScaleUpTopology::full_mesh ? ic.links_per_peer() * (n - 1)
                                                                   : ic.links_per_gpu);
    CHECK(bus_bandwidth(n * 64e6, r.time_s, n) < line);
    CHECK(bus_bandwidth(n * 64e6, r.time_s, n) > 0.5 * line * ic.link_efficiency);
    // Two nodes go through the NIC.
    const auto two = all_to_all(ic, {2 * n, 2}, TrafficMatrix::uniform(2 * n, 64e6), Algorithm::direct);
    CHECK(two.bottleneck.rfind("nic", 0) == 0);
  }
}

}  // namespace tdmsim::net

namespace tdmsim::net {

// Issue 23's rule for machine keys: each one changes the model (or is refused).
// Every key of interconnect: and its nic:, changed alone, changes some
// collective's time, or (gpus_per_node) what placements are accepted.
TEST_CASE("every interconnect key changes the model") {
  const auto base = [] {
    auto ic = with_nic(mesh(4));
    return ic;
  };
  const auto time_of = [](const InterconnectSpec& ic) {
    // Large and small, inside a node and across two, in 1 KB messages, one pair alone.
    const double big = all_to_all(ic, {4, 1}, TrafficMatrix::uniform(4, 1e8), Algorithm::direct).time_s;
    const double small = all_to_all(ic, {4, 1}, TrafficMatrix::uniform(4, 1e3), Algorithm::direct, 1e3).time_s;
    const double nodes = all_to_all(ic, {8, 2}, TrafficMatrix::uniform(8, 1e8), Algorithm::direct).time_s;
    const double nodes_small = all_to_all(ic, {8, 2}, TrafficMatrix::uniform(8, 1e3), Algorithm::direct).time_s;
    TrafficMatrix one_pair(4);  // a mesh and a switch of equal port bandwidth differ here only
    one_pair.at(0, 1) = 1e8;
    const double pair = all_to_all(ic, {4, 1}, one_pair, Algorithm::direct).time_s;
    return std::vector<double>{big, small, nodes, nodes_small, pair};
  };
  const auto reference = time_of(base());
  const std::vector<std::pair<const char*, void (*)(InterconnectSpec&)>> changes = {
      {"topology", [](InterconnectSpec& ic) { ic.topology = ScaleUpTopology::switch_; }},
      {"links_per_gpu", [](InterconnectSpec& ic) { ic.links_per_gpu *= 2; }},
      {"link_bandwidth", [](InterconnectSpec& ic) { ic.link_bandwidth.bytes_per_s *= 2; }},
      {"link_efficiency", [](InterconnectSpec& ic) { ic.link_efficiency = 0.5; }},
      {"link_latency", [](InterconnectSpec& ic) { ic.link_latency.ps *= 3; }},
      {"message_overhead", [](InterconnectSpec& ic) { ic.message_overhead.ps *= 3; }},
      {"nic.bandwidth", [](InterconnectSpec& ic) { ic.nic->bandwidth.bytes_per_s *= 2; }},
      {"nic.latency", [](InterconnectSpec& ic) { ic.nic->latency.ps *= 3; }},
      {"nic.efficiency", [](InterconnectSpec& ic) { ic.nic->efficiency = 0.5; }},
      {"gpus_per_node", [](InterconnectSpec& ic) {  // more peers, 3 links each (7 x 3 links)
         ic.gpus_per_node = 8;
         ic.links_per_gpu = 7 * 3;
       }},
  };
  std::size_t keys = 0;
  config::KeyLister lister;
  auto ic = base();
  ic.visit(lister);
  for (const auto& key : lister.keys) {
    INFO(key);
    const auto it = std::find_if(changes.begin(), changes.end(),
                                 [&](const auto& c) { return key == c.first; });
    REQUIRE(it != changes.end());  // a new key needs a line here showing what it changes
    auto changed = base();
    it->second(changed);
    CHECK(time_of(changed) != reference);
    ++keys;
  }
  CHECK(keys == changes.size());
  // gpus_per_node also bounds a node: 4 GPUs per node refuse 8 on one node.
  CHECK_THROWS_AS(all_to_all(base(), {8, 1}, TrafficMatrix::uniform(8, 1), Algorithm::direct),
                  std::invalid_argument);
}

}  // namespace tdmsim::net
