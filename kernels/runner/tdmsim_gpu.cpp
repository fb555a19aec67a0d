// tdmsim-gpu: runs one GPU case (written by `tdmsim gpu-case`) on the GPU.
//
//   tdmsim-gpu CASE_DIR --output DIR [--warmup N] [--repeats N] [--no-time] [--save-y]
//
// 1. Inputs and weights from the seed (several weight copies, rotated so no
//    timed run finds the last run's weights in L2).
// 2. Routing: the model's router on the GPU (checked against the plan's
//    routing) or the plan's routing as given.
// 3. A check run with every output poisoned first: the layout from the sort
//    kernel against the plan's, bit for bit; y must be finite.
// 4. Timing: the layer (zero y, sort, expert stages) captured in a graph per
//    weight copy with an event between kernels; warm-up runs, then the median
//    of `repeats` runs, outputs poisoned before each; the last run's y must
//    match the check run's.
// Writes DIR/run.json (device, config, checks, per-kernel times) and, with
// --save-y, DIR/y.npy (fp32 [tokens][hidden]). Exit 0 ok, 1 a check failed,
// 2 bad usage or input, 3 the case needs a kernel that is not built.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "kernels/hip/hip_portability.h"
#include "kernels/moe/layer_buffers.h"
#include "kernels/moe/moe_case.h"
#include "kernels/moe/moe_gpu.h"

using namespace tdmsim::gpu;

namespace {

struct Options {
  std::string case_dir, output;
  int warmup = 10, repeats = 50;
  bool time = true, save_y = false;
};

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr,
               "%s\nusage: tdmsim-gpu CASE_DIR --output DIR [--warmup N] [--repeats N] "
               "[--no-time] [--save-y]\n",
               why);
  std::exit(2);
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const auto next = [&]() -> std::string {
      if (i + 1 >= argc) usage(("missing value after " + a).c_str());
      return argv[++i];
    };
    if (a == "--help" || a == "-h") usage("tdmsim-gpu: run one GPU case");
    else if (a == "--output") o.output = next();
    else if (a == "--warmup") o.warmup = std::stoi(next());
    else if (a == "--repeats") o.repeats = std::stoi(next());
    else if (a == "--no-time") o.time = false;
    else if (a == "--save-y") o.save_y = true;
    else if (!a.empty() && a[0] == '-') usage(("unknown option " + a).c_str());
    else if (o.case_dir.empty()) o.case_dir = a;
    else usage("more than one case folder");
  }
  if (o.case_dir.empty() || o.output.empty()) usage("need CASE_DIR and --output");
  if (o.repeats < 1 || o.warmup < 0) usage("--repeats >= 1, --warmup >= 0");
  return o;
}

void write_npy(const std::string& path, const std::vector<float>& v, std::uint32_t rows,
               std::uint32_t cols) {
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (" +
                       std::to_string(rows) + ", " + std::to_string(cols) + "), }";
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::ofstream f(path, std::ios::binary);
  f.write("\x93NUMPY\x01\x00", 8);
  const auto len = static_cast<std::uint16_t>(header.size());
  f.put(static_cast<char>(len & 0xFF));
  f.put(static_cast<char>(len >> 8));
  f << header;
  f.write(reinterpret_cast<const char*>(v.data()), static_cast<std::streamsize>(v.size() * 4));
  if (!f) {
    std::fprintf(stderr, "cannot write %s\n", path.c_str());
    std::exit(2);
  }
}

std::string json_str(const std::string& s) {
  std::string o = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\';
    o += c;
  }
  return o + "\"";
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v[static_cast<std::size_t>(q * static_cast<double>(v.size() - 1) + 0.5)];
}

// The layer's kernels, in order, each a named segment between two events.
struct Segment {
  std::string name;
  std::vector<double> us;
};

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  MoeCase c;
  try {
    c = read_case(o.case_dir);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tdmsim-gpu: %s\n", e.what());
    return 2;
  }
  std::string why;
  if (!supported(c, why)) {
    std::fprintf(stderr, "tdmsim-gpu: %s: unsupported: %s\n", c.name.c_str(), why.c_str());
    return 3;
  }
  const LayerDims d = dims_of(c);
  const std::size_t esize = d.fp8 ? 1 : 2;
  int dev = 0;
  hipDeviceProp_t prop{};
  TDMSIM_HIP_CHECK(hipGetDevice(&dev));
  TDMSIM_HIP_CHECK(hipGetDeviceProperties(&prop, dev));
  int driver = 0, runtime = 0;
  TDMSIM_HIP_CHECK(hipDriverGetVersion(&driver));
  TDMSIM_HIP_CHECK(hipRuntimeGetVersion(&runtime));
  hipStream_t s;
  TDMSIM_HIP_CHECK(hipStreamCreate(&s));

  // ---- weights, rotated copies ----
  const WeightSizes sizes = weight_sizes(d);
  const std::size_t w13_elems = sizes.w13_elems, w2_elems = sizes.w2_elems;
  const std::size_t w13_scales = sizes.w13_scales, w2_scales = sizes.w2_scales;
  const double expert_bytes = 3.0 * d.hidden * d.inter * esize;
  std::uint32_t touched = 0;
  for (std::uint32_t e = 0; e < d.experts_fused; ++e) {
    touched += c.expert_first_block[e + 1] > c.expert_first_block[e];
  }
  // Enough copies that one pass over the touched experts of all the others
  // exceeds twice the L2; at most 8, and at most ~60 GB of weights.
  const double l2 = static_cast<double>(prop.l2CacheSize);
  const double set_bytes = (w13_elems + w2_elems) * static_cast<double>(esize);
  int copies = static_cast<int>(std::ceil(2.0 * l2 / std::max(1.0, touched * expert_bytes))) + 1;
  copies = std::max(1, std::min({copies, 8, static_cast<int>(60e9 / std::max(1.0, set_bytes))}));
  std::vector<Weights> weights(copies);
  for (int i = 0; i < copies; ++i) {
    weights[i] = alloc_weights(d);
    if (i == 0) {
      generate_weights(c, d, weights[0], s);
    } else {
      TDMSIM_HIP_CHECK(hipMemcpyAsync(weights[i].w13, weights[0].w13, w13_elems * esize, hipMemcpyDeviceToDevice, s));
      TDMSIM_HIP_CHECK(hipMemcpyAsync(weights[i].w2, weights[0].w2, w2_elems * esize, hipMemcpyDeviceToDevice, s));
      if (d.fp8) {
        TDMSIM_HIP_CHECK(hipMemcpyAsync(weights[i].w13_scale, weights[0].w13_scale, w13_scales * 4, hipMemcpyDeviceToDevice, s));
        TDMSIM_HIP_CHECK(hipMemcpyAsync(weights[i].w2_scale, weights[0].w2_scale, w2_scales * 4, hipMemcpyDeviceToDevice, s));
      }
    }
  }

  // ---- activations and work buffers ----
  const std::uint32_t rows = layer_rows(c, d);
  const std::uint32_t max_blocks = layer_max_blocks(c);
  const std::size_t inter_elems = layer_inter_elems(c);
  std::vector<Buffers> bufs(copies);
  Buffers& b = bufs[0];
  b = alloc_buffers(c, d);
  generate_x(c, d, b, s);
  // Copies of x rotate with the weights; everything else is shared.
  for (int i = 1; i < copies; ++i) {
    bufs[i] = b;
    bufs[i].x = device_alloc<std::uint8_t>(std::size_t{c.tokens} * c.hidden * esize);
    TDMSIM_HIP_CHECK(hipMemcpyAsync(bufs[i].x, b.x, std::size_t{c.tokens} * c.hidden * esize, hipMemcpyDeviceToDevice, s));
    if (d.fp8) {
      bufs[i].x_scale = device_alloc<float>(std::size_t{c.tokens} * d.hb());
      TDMSIM_HIP_CHECK(hipMemcpyAsync(bufs[i].x_scale, b.x_scale, std::size_t{c.tokens} * d.hb() * 4, hipMemcpyDeviceToDevice, s));
    }
  }

  // ---- routing ----
  std::size_t id_mismatch = 0;
  double weight_max_diff = 0.0;
  double router_us = 0.0;
  if (c.routing_source == "router") {
    b.logits = device_alloc<float>(std::size_t{c.tokens} * c.experts_total);
    b.router_w = device_alloc<float>(std::size_t{c.experts_total} * c.hidden);
    b.router_bias = c.router_bias ? device_alloc<float>(c.experts_total) : nullptr;
    b.correction_bias = c.correction_bias ? device_alloc<float>(c.experts_total) : nullptr;
    generate_router(c, b, s);
    hipEvent_t r0, r1;
    TDMSIM_HIP_CHECK(hipEventCreate(&r0));
    TDMSIM_HIP_CHECK(hipEventCreate(&r1));
    TDMSIM_HIP_CHECK(hipEventRecord(r0, s));
    launch_router(c, b, s);
    TDMSIM_HIP_CHECK(hipEventRecord(r1, s));
    TDMSIM_HIP_CHECK(hipEventSynchronize(r1));
    float ms = 0;
    TDMSIM_HIP_CHECK(hipEventElapsedTime(&ms, r0, r1));
    router_us = ms * 1e3;
    const auto ids = download(b.topk_ids, c.routing_ids.size());
    const auto w = download(b.topk_weights, c.routing_weights.size());
    for (std::size_t i = 0; i < ids.size(); ++i) {
      id_mismatch += ids[i] != c.routing_ids[i];
      weight_max_diff = std::max(weight_max_diff, std::fabs(double(w[i]) - c.routing_weights[i]));
    }
  } else {
    upload(b.topk_ids, c.routing_ids);
    upload(b.topk_weights, c.routing_weights);
  }
  for (int i = 1; i < copies; ++i) {
    bufs[i].topk_ids = b.topk_ids;
    bufs[i].topk_weights = b.topk_weights;
  }

  // ---- the layer ----
  std::vector<Segment> segments;
  const auto layer = [&](int copy, std::vector<hipEvent_t>* ev) {
    Buffers& bb = bufs[copy];
    const Weights& ww = weights[copy];
    std::size_t at = 0;
    const bool naming = ev && segments.empty();  // the first capture names the segments
    // An event after each kernel; the segment it closes is named `name`.
    run_layer(c, d, ww, bb, s, [&](const char* name) {
      if (!ev) return;
      if (naming && at > 0) segments.push_back({name, {}});
      TDMSIM_HIP_CHECK(hipEventRecordWithFlags((*ev)[at++], s, hipEventRecordExternal));
    });
  };
  const auto poison = [&](Buffers& bb) {
    TDMSIM_HIP_CHECK(hipMemsetAsync(bb.y, 0xFF, std::size_t{c.tokens} * c.hidden * 4, s));
    TDMSIM_HIP_CHECK(hipMemsetAsync(bb.inter, 0xFF, inter_elems * 2, s));
    if (bb.inter_q) TDMSIM_HIP_CHECK(hipMemsetAsync(bb.inter_q, 0xFF, inter_elems, s));
    TDMSIM_HIP_CHECK(hipMemsetAsync(bb.sorted_rows, 0xFF, std::size_t{std::max(rows, c.capacity)} * 4, s));
    TDMSIM_HIP_CHECK(hipMemsetAsync(bb.block_expert, 0xFF, std::size_t{max_blocks} * 4, s));
  };

  // ---- check run ----
  poison(b);
  layer(0, nullptr);
  TDMSIM_HIP_CHECK(hipStreamSynchronize(s));
  const auto sorted_rows = download(b.sorted_rows, c.capacity);
  const auto sorted_weights = download(b.sorted_weights, c.capacity);
  const auto block_expert = download(b.block_expert, c.blocks);
  const auto first_block = download(b.expert_first_block, d.experts_fused + 1);
  const auto info = download(b.layout_info, 2);
  bool layout_ok = sorted_rows == c.sorted_rows && block_expert == c.block_expert &&
                   first_block == c.expert_first_block && info[0] == c.padded_rows &&
                   info[1] == c.blocks &&
                   std::memcmp(sorted_weights.data(), c.sorted_weights.data(), c.capacity * 4) == 0;
  const auto y = download(b.y, std::size_t{c.tokens} * c.hidden);
  std::size_t nonfinite = 0;
  for (float v : y) nonfinite += !std::isfinite(v);
  if (o.save_y) write_npy(o.output + "/y.npy", y, c.tokens, c.hidden);

  // ---- timing ----
  std::vector<double> total_us;
  double rerun_rel = 0.0;
  if (o.time) {
    const int marks = 8;
    std::vector<hipEvent_t> ev(marks);
    for (auto& e : ev) TDMSIM_HIP_CHECK(hipEventCreate(&e));
    std::vector<hipGraphExec_t> graphs(copies);
    for (int i = 0; i < copies; ++i) {
      hipGraph_t g;
      TDMSIM_HIP_CHECK(hipStreamBeginCapture(s, hipStreamCaptureModeGlobal));
      layer(i, &ev);
      TDMSIM_HIP_CHECK(hipStreamEndCapture(s, &g));
      TDMSIM_HIP_CHECK(hipGraphInstantiate(&graphs[i], g, nullptr, nullptr, 0));
      TDMSIM_HIP_CHECK(hipGraphDestroy(g));
    }
    const std::size_t used = segments.size() + 1;  // events per run
    for (int r = 0; r < o.warmup + o.repeats; ++r) {
      const int copy = r % copies;
      poison(bufs[copy]);
      TDMSIM_HIP_CHECK(hipGraphLaunch(graphs[copy], s));
      TDMSIM_HIP_CHECK(hipStreamSynchronize(s));
      if (r < o.warmup) continue;
      float ms = 0;
      for (std::size_t k = 0; k + 1 < used; ++k) {
        TDMSIM_HIP_CHECK(hipEventElapsedTime(&ms, ev[k], ev[k + 1]));
        segments[k].us.push_back(ms * 1e3);
      }
      TDMSIM_HIP_CHECK(hipEventElapsedTime(&ms, ev[0], ev[used - 1]));
      total_us.push_back(ms * 1e3);
    }
    // The last timed run's y against the check run's (atomic adds may sum in
    // another order: equal up to fp32 rounding).
    const int last = (o.warmup + o.repeats - 1) % copies;
    const auto y2 = download(bufs[last].y, y.size());
    double num = 0, den = 0;
    for (std::size_t i = 0; i < y.size(); ++i) {
      const double dd = double(y2[i]) - y[i];
      num += std::isfinite(dd) ? dd * dd : 1e300;
      den += double(y[i]) * y[i];
    }
    rerun_rel = den > 0 ? std::sqrt(num / den) : std::sqrt(num);
    for (auto& g : graphs) TDMSIM_HIP_CHECK(hipGraphExecDestroy(g));
  }

  const bool routing_ok = id_mismatch == 0;
  const bool ok = layout_ok && nonfinite == 0 && routing_ok && rerun_rel < 1e-4;
  std::ostringstream j;
  const std::time_t now = std::time(nullptr);
  char date[32];
  std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  j << "{\n  \"case\": " << json_str(c.name) << ",\n  \"date\": " << json_str(date)
    << ",\n  \"device\": {\"name\": " << json_str(prop.name) << ", \"sms\": "
    << prop.multiProcessorCount << ", \"l2_bytes\": " << prop.l2CacheSize
    << ", \"driver\": " << driver << ", \"runtime\": " << runtime << "},\n"
    << "  \"config\": {\"tokens\": " << c.tokens << ", \"hidden\": " << c.hidden
    << ", \"inter\": " << c.inter << ", \"experts_fused\": " << d.experts_fused
    << ", \"slots\": " << d.slots << ", \"dtype\": " << json_str(c.dtype) << ", \"quant\": "
    << json_str(c.quant) << ", \"stages\": " << c.stages << ", \"block_m\": " << c.block_m
    << ", \"gate_up_tile\": " << json_str(case_detail::tile_text(c.gate_up_tile))
    << ", \"down_tile\": " << json_str(case_detail::tile_text(c.down_tile))
    << ", \"split_k\": " << c.split_k << ", \"pipeline_stages\": " << c.pipeline_stages
    << ", \"raster_group\": " << c.raster_group
    << ", \"blocks\": " << c.blocks << ", \"weight_copies\": " << copies
    << ", \"matrix_backend\": " << json_str(matrix_backend()) << "},\n"
    << "  \"checks\": {\"layout_identical\": " << (layout_ok ? "true" : "false")
    << ", \"routing_source\": " << json_str(c.routing_source)
    << ", \"routing_id_mismatches\": " << id_mismatch << ", \"routing_weight_max_abs_diff\": "
    << weight_max_diff << ", \"y_nonfinite\": " << nonfinite
    << ", \"rerun_rel_diff\": " << rerun_rel << ", \"ok\": " << (ok ? "true" : "false") << "},\n"
    << "  \"router_us\": " << router_us << ",\n  \"timing\": {\"warmup\": " << o.warmup
    << ", \"repeats\": " << o.repeats;
  if (!total_us.empty()) {
    j << ", \"total_us_median\": " << median(total_us) << ", \"total_us_min\": "
      << *std::min_element(total_us.begin(), total_us.end()) << ", \"total_us_p90\": "
      << quantile(total_us, 0.9) << ", \"kernels_us_median\": {";
    for (std::size_t k = 0; k < segments.size(); ++k) {
      j << (k ? ", " : "") << json_str(segments[k].name) << ": " << median(segments[k].us);
    }
    j << "}";
  }
  j << "}\n}\n";
  std::ofstream out(o.output + "/run.json");
  out << j.str();
  if (!out) {
    std::fprintf(stderr, "tdmsim-gpu: cannot write %s/run.json\n", o.output.c_str());
    return 2;
  }
  std::printf("%s: layout %s, routing mismatches %zu, y non-finite %zu, rerun diff %.2e, layer %.1f us\n",
              c.name.c_str(), layout_ok ? "identical" : "DIFFERENT", id_mismatch, nonfinite,
              rerun_rel, total_us.empty() ? 0.0 : median(total_us));
  return ok ? 0 : 1;
}
