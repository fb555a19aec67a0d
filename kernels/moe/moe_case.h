// A "GPU case": everything the GPU runner needs to run one scenario's MoE
// layer, written by `tdmsim gpu-case` from the plan (docs/gpu-kernels.md
// "Case files"). Plain C++17 with no dependencies, so the runner builds with
// nothing but nvcc or hipcc on a machine without the project's libraries.
//
// Layout of a case folder:
//   case.txt        one `key value` per line (below)
//   <array>.bin     raw little-endian arrays named in `arrays`
// The plan's layout travels only so the runner can check that its own sort
// kernel reproduces it bit for bit; the kernels compute everything themselves.
#pragma once

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace tdmsim::gpu {

struct KernelTileCfg {
  std::uint32_t threads = 0, m = 0, n = 0, k = 0;
};

struct MoeCase {
  std::string name;
  std::uint64_t seed = 0;
  // Layer shape (this GPU's share, see plan::LayerShape).
  std::uint32_t tokens = 0, hidden = 0, inter = 0, shared_inter = 0;
  std::uint32_t experts_total = 0, experts_local = 0;
  std::uint32_t shared = 0, shared_chunks = 0, top_k = 0;
  std::string dtype;       // bf16 | fp8_e4m3
  std::string quant;       // none | per_token | block_128
  std::string activation;  // silu | gelu | swiglu_oai
  float activation_limit = 0;
  // Routing: `router` runs the model's router on the GPU; `given` takes the
  // plan's routing (synthetic distributions, traces).
  std::string routing_source;
  std::string scoring;  // softmax | sigmoid
  bool renormalize = false;
  std::uint32_t n_group = 1, topk_group = 1;
  double routed_scaling = 1.0;
  bool router_bias = false, correction_bias = false;
  float router_weight_scale = 0;
  // Kernel configuration (plan::KernelChoice).
  std::uint32_t stages = 2, block_m = 0, split_k = 1, pipeline_stages = 2, raster_group = 1;
  KernelTileCfg gate_up_tile, down_tile;
  // The plan's layout sizes.
  std::uint32_t capacity = 0, padded_rows = 0, blocks = 0;

  // Arrays, loaded from the .bin files.
  std::vector<std::uint32_t> routing_ids;         // [tokens][top_k] global ids
  std::vector<float> routing_weights;             // [tokens][top_k]
  std::vector<std::uint32_t> sorted_rows;         // [capacity]
  std::vector<float> sorted_weights;              // [capacity]
  std::vector<std::uint32_t> block_expert;        // [blocks]
  std::vector<std::uint32_t> expert_first_block;  // [experts_fused + 1]

  std::uint32_t slots() const { return top_k + shared; }
  std::uint32_t experts_fused() const { return experts_local + shared; }
  bool fp8() const { return dtype == "fp8_e4m3"; }
};

namespace case_detail {

// Floats are written as C99 hex literals: exact in both directions.
inline std::string hex(double v) {
  char b[64];
  std::snprintf(b, sizeof b, "%a", v);
  return b;
}

// Writes one whole file: (path, bytes).
using FileWriter = std::function<void(const std::string&, std::string_view)>;

inline void write_file_plain(const std::string& path, std::string_view bytes) {
  std::ofstream f(path, std::ios::binary);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  f.close();  // the final flush's error (a full disk) shows only here
  if (!f) throw std::runtime_error("cannot write " + path);
}

template <class T>
void write_array(const std::string& dir, const std::string& name, const std::vector<T>& v,
                 const FileWriter& write) {
  write(dir + "/" + name + ".bin",
        std::string_view(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T)));
}

template <class T>
std::vector<T> read_array(const std::string& dir, const std::string& name, std::size_t n) {
  std::vector<T> v(n);
  std::ifstream f(dir + "/" + name + ".bin", std::ios::binary | std::ios::ate);
  if (!f) throw std::runtime_error("cannot open " + dir + "/" + name + ".bin");
  const auto size = static_cast<std::size_t>(f.tellg());
  if (size != n * sizeof(T)) {
    throw std::runtime_error(dir + "/" + name + ".bin has " + std::to_string(size) +
                             " bytes, case.txt implies " + std::to_string(n * sizeof(T)));
  }
  f.seekg(0);
  f.read(reinterpret_cast<char*>(v.data()), static_cast<std::streamsize>(size));
  return v;
}

inline std::string tile_text(const KernelTileCfg& t) {
  return std::to_string(t.threads) + "x" + std::to_string(t.m) + "x" + std::to_string(t.n) +
         "x" + std::to_string(t.k);
}

inline KernelTileCfg parse_tile(const std::string& s) {
  KernelTileCfg t;
  if (std::sscanf(s.c_str(), "%ux%ux%ux%u", &t.threads, &t.m, &t.n, &t.k) != 4) {
    throw std::runtime_error("case.txt: bad tile '" + s + "' (expected threads x M x N x K)");
  }
  return t;
}

}  // namespace case_detail

// `write` writes each file whole; the default is plain std::ofstream (the GPU
// runner links nothing else), tdmsim passes its checked, fsynced writer.
inline void write_case(const std::string& dir, const MoeCase& c,
                       const case_detail::FileWriter& write = case_detail::write_file_plain) {
  using namespace case_detail;
  std::ostringstream f;
  f << "format tdmsim-gpu-case 1\n"
    << "name " << c.name << "\n"
    << "seed " << c.seed << "\n"
    << "tokens " << c.tokens << "\nhidden " << c.hidden << "\ninter " << c.inter
    << "\nshared_inter " << c.shared_inter << "\nexperts_total " << c.experts_total
    << "\nexperts_local " << c.experts_local << "\nshared " << c.shared
    << "\nshared_chunks " << c.shared_chunks << "\ntop_k " << c.top_k << "\ndtype " << c.dtype
    << "\nquant " << c.quant << "\nactivation " << c.activation
    << "\nactivation_limit " << hex(c.activation_limit) << "\nrouting_source "
    << c.routing_source << "\nscoring " << c.scoring << "\nrenormalize " << c.renormalize
    << "\nn_group " << c.n_group << "\ntopk_group " << c.topk_group << "\nrouted_scaling "
    << hex(c.routed_scaling) << "\nrouter_bias " << c.router_bias << "\ncorrection_bias "
    << c.correction_bias << "\nrouter_weight_scale " << hex(c.router_weight_scale)
    << "\nstages " << c.stages << "\nblock_m " << c.block_m << "\nsplit_k " << c.split_k
    << "\npipeline_stages " << c.pipeline_stages << "\nraster_group " << c.raster_group
    << "\ngate_up_tile " << tile_text(c.gate_up_tile)
    << "\ndown_tile " << tile_text(c.down_tile) << "\ncapacity " << c.capacity
    << "\npadded_rows " << c.padded_rows << "\nblocks " << c.blocks << "\n";
  write(dir + "/case.txt", f.str());
  write_array(dir, "routing_ids", c.routing_ids, write);
  write_array(dir, "routing_weights", c.routing_weights, write);
  write_array(dir, "sorted_rows", c.sorted_rows, write);
  write_array(dir, "sorted_weights", c.sorted_weights, write);
  write_array(dir, "block_expert", c.block_expert, write);
  write_array(dir, "expert_first_block", c.expert_first_block, write);
}

inline MoeCase read_case(const std::string& dir) {
  using namespace case_detail;
  std::ifstream f(dir + "/case.txt");
  if (!f) throw std::runtime_error("cannot open " + dir + "/case.txt");
  std::map<std::string, std::string> kv;
  std::string line;
  int lineno = 0;
  while (std::getline(f, line)) {
    ++lineno;
    if (line.empty()) continue;
    const auto sp = line.find(' ');
    if (sp == std::string::npos) {
      throw std::runtime_error(dir + "/case.txt:" + std::to_string(lineno) + ": no value");
    }
    kv[line.substr(0, sp)] = line.substr(sp + 1);
  }
  if (kv["format"] != "tdmsim-gpu-case 1") {
    throw std::runtime_error(dir + "/case.txt: not a tdmsim GPU case (format line)");
  }
  const auto get = [&](const char* key) -> const std::string& {
    const auto it = kv.find(key);
    if (it == kv.end()) throw std::runtime_error(dir + "/case.txt: missing key '" + key + "'");
    return it->second;
  };
  const auto u32 = [&](const char* key) {
    return static_cast<std::uint32_t>(std::stoul(get(key)));
  };
  MoeCase c;
  c.name = get("name");
  c.seed = std::stoull(get("seed"));
  c.tokens = u32("tokens");
  c.hidden = u32("hidden");
  c.inter = u32("inter");
  c.shared_inter = u32("shared_inter");
  c.experts_total = u32("experts_total");
  c.experts_local = u32("experts_local");
  c.shared = u32("shared");
  c.shared_chunks = u32("shared_chunks");
  c.top_k = u32("top_k");
  c.dtype = get("dtype");
  c.quant = get("quant");
  c.activation = get("activation");
  c.activation_limit = static_cast<float>(std::strtod(get("activation_limit").c_str(), nullptr));
  c.routing_source = get("routing_source");
  c.scoring = get("scoring");
  c.renormalize = u32("renormalize") != 0;
  c.n_group = u32("n_group");
  c.topk_group = u32("topk_group");
  c.routed_scaling = std::strtod(get("routed_scaling").c_str(), nullptr);
  c.router_bias = u32("router_bias") != 0;
  c.correction_bias = u32("correction_bias") != 0;
  c.router_weight_scale =
      static_cast<float>(std::strtod(get("router_weight_scale").c_str(), nullptr));
  c.stages = u32("stages");
  c.block_m = u32("block_m");
  c.split_k = u32("split_k");
  c.pipeline_stages = u32("pipeline_stages");
  c.raster_group = u32("raster_group");
  c.gate_up_tile = parse_tile(get("gate_up_tile"));
  c.down_tile = parse_tile(get("down_tile"));
  c.capacity = u32("capacity");
  c.padded_rows = u32("padded_rows");
  c.blocks = u32("blocks");
  const std::size_t picks = std::size_t{c.tokens} * c.top_k;
  c.routing_ids = read_array<std::uint32_t>(dir, "routing_ids", picks);
  c.routing_weights = read_array<float>(dir, "routing_weights", picks);
  c.sorted_rows = read_array<std::uint32_t>(dir, "sorted_rows", c.capacity);
  c.sorted_weights = read_array<float>(dir, "sorted_weights", c.capacity);
  c.block_expert = read_array<std::uint32_t>(dir, "block_expert", c.blocks);
  c.expert_first_block = read_array<std::uint32_t>(dir, "expert_first_block", c.experts_fused() + 1);
  return c;
}

}  // namespace tdmsim::gpu
