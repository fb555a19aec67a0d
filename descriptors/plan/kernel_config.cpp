// Reading tuned kernel tables in AITER's CSV columns and looking a layer up in
// one the way AITER's fused_moe.py does (get_padded_M, get_2stage_cfgs).
#include "descriptors/plan/kernel_config.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <map>
#include <optional>
#include <tuple>
#include <utility>
#include <vector>

#include <fmt/core.h>
#include <fmt/ranges.h>

#include "descriptors/plan/aiter_heuristic.h"
#include "descriptors/plan/aiter_kernels.h"
#include "descriptors/plan/aiter_names.h"
#include "descriptors/plan/default_tile.h"
#include "descriptors/plan/moe_plan.h"
#include "workloads/config/diagnostics.h"
#include "workloads/util/input_file.h"

namespace tdmsim::plan {
namespace {

struct ConfigField {
  std::string text;
  int column = 0;  // 1-based character column where the field starts
};

[[noreturn]] void fail(const std::string& file, int line, int column, const std::string& key,
                       const std::string& message) {
  throw config::ConfigError({{{file, line, column}, key, message}});
}

// One CSV line (RFC 4180 quoting: "a,b" and "" inside quotes), trailing
// whitespace of unquoted fields trimmed.
std::vector<ConfigField> split_line(std::string_view s, const std::string& file, int line) {
  std::vector<ConfigField> out;
  std::size_t i = 0;
  while (true) {
    ConfigField f;
    f.column = static_cast<int>(i) + 1;
    if (i < s.size() && s[i] == '"') {
      ++i;
      bool closed = false;
      while (i < s.size()) {
        if (s[i] == '"') {
          if (i + 1 < s.size() && s[i + 1] == '"') {
            f.text += '"';
            i += 2;
            continue;
          }
          ++i;
          closed = true;
          break;
        }
        f.text += s[i++];
      }
      if (!closed) fail(file, line, f.column, "", "unterminated quoted field");
      if (i < s.size() && s[i] != ',') fail(file, line, static_cast<int>(i) + 1, "", "text after a quoted field");
    } else {
      const std::size_t end = std::min(s.find(',', i), s.size());
      f.text = std::string(s.substr(i, end - i));
      i = end;
      while (!f.text.empty() && (f.text.back() == ' ' || f.text.back() == '\t')) f.text.pop_back();
      std::size_t lead = 0;
      while (lead < f.text.size() && (f.text[lead] == ' ' || f.text[lead] == '\t')) ++lead;
      f.text.erase(0, lead);
    }
    out.push_back(std::move(f));
    if (i >= s.size()) break;
    ++i;  // the comma
  }
  return out;
}

// A non-negative integer as pandas writes one (32, or 32.0 for a column that
// held a float), from `min` to `max`.
std::uint32_t number(const ConfigField& f, const std::string& column, std::uint32_t min, std::uint32_t max,
                     const std::string& file, int line) {
  std::string_view t = f.text;
  if (t.size() > 2 && t.substr(t.size() - 2) == ".0") t.remove_suffix(2);
  std::uint64_t v = 0;
  const auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  if (t.empty() || ec != std::errc{} || p != t.data() + t.size() || v > max) {
    fail(file, line, f.column, column,
         fmt::format("column {}: expected a whole number from {} to {}, got '{}'", column, min, max, f.text));
  }
  if (v < min) fail(file, line, f.column, column, fmt::format("column {}: must be at least {}", column, min));
  return static_cast<std::uint32_t>(v);
}

bool flag(const ConfigField& f, const std::string& column, const std::string& file, int line) {
  const std::string& t = f.text;
  if (t == "1" || t == "True" || t == "true" || t == "1.0") return true;
  if (t == "0" || t == "False" || t == "false" || t == "0.0" || t.empty()) return false;
  fail(file, line, f.column, column, fmt::format("column {}: expected 0, 1, True or False, got '{}'", column, t));
}

constexpr std::uint32_t kMaxDim = 1u << 24;  // the schema's largest token count; dims far below

}  // namespace

std::uint32_t aiter_padded_m(std::uint32_t m) {
  // The tiers of _PADDED_M_TIERS = [32768, 131072]: below the first, the
  // next power of two (nextPow2: 1 for 0 and 1).
  if (m < 32768) {
    std::uint32_t p = 1;
    while (p < m) p *= 2;
    return p;
  }
  return m >= 131072 ? 131072 : 32768;
}

KernelConfigTable parse_kernel_config(const std::string& text, const std::string& file) {
  KernelConfigTable t;
  t.file = file;
  std::vector<std::string> header;
  std::map<std::string, std::size_t> col;
  using Key = std::tuple<std::uint32_t, std::uint32_t, std::uint32_t, std::uint32_t, std::uint32_t, std::uint32_t,
                         std::string, std::string, std::string, std::string, std::string, int, int>;
  std::map<Key, std::size_t> seen;  // key -> index in rows
  int line = 0;
  // A UTF-8 byte-order mark (spreadsheet exports write one) is not part of
  // the first column's name.
  std::size_t pos = text.rfind("\xEF\xBB\xBF", 0) == 0 ? 3 : 0;
  while (pos <= text.size()) {
    const std::size_t nl = std::min(text.find('\n', pos), text.size());
    std::string_view s(text.data() + pos, nl - pos);
    pos = nl + 1;
    ++line;
    if (!s.empty() && s.back() == '\r') s.remove_suffix(1);
    if (s.find_first_not_of(" \t") == std::string_view::npos) {
      if (nl >= text.size()) break;
      continue;  // blank lines (a trailing newline) carry nothing
    }
    if (s.find('\0') != std::string_view::npos) fail(file, line, 0, "", "not a text file (a NUL byte)");
    // A carriage return inside a line: lines ended by CR alone (classic Mac
    // exports) would read as one long header.
    if (const std::size_t cr = s.find('\r'); cr != std::string_view::npos) {
      fail(file, line, static_cast<int>(cr) + 1, "",
           "a carriage return inside a line (lines end with LF or CRLF; a CR alone, or a stray one, is refused)");
    }
    const std::vector<ConfigField> f = split_line(s, file, line);
    if (header.empty()) {
      // A file whose header is missing (a blank first line, then the data)
      // would read its first row as the header: said as such, not as a
      // column "appearing twice".
      const bool names_a_column = std::any_of(f.begin(), f.end(), [](const ConfigField& c) {
        return c.text == "cu_num" || c.text == "token" || c.text == "model_dim" || c.text == "inter_dim";
      });
      if (!names_a_column) {
        fail(file, line, 1, "",
             "expected the header line (cu_num, token, model_dim, inter_dim, ...), got a line that names none "
             "of those columns: the table's first line that is not blank must be its header");
      }
      for (std::size_t i = 0; i < f.size(); ++i) {
        if (!col.emplace(f[i].text, i).second) {
          fail(file, line, f[i].column, f[i].text, "column '" + f[i].text + "' appears twice in the header");
        }
        header.push_back(f[i].text);
      }
      for (const char* need : {"cu_num", "token", "model_dim", "inter_dim", "expert", "topk", "act_type",
                               "q_dtype_a", "q_dtype_w", "q_type", "block_m", "ksplit"}) {
        if (!col.count(need)) {
          fail(file, line, 1, need,
               fmt::format("missing column '{}' (AITER's tuned fused-MoE tables have cu_num, token, model_dim, "
                           "inter_dim, expert, topk, act_type, q_dtype_a, q_dtype_w, q_type, block_m, ksplit, "
                           "kernelName1/kernelName2 or tile1/tile2)",
                           need));
        }
      }
      const bool names = col.count("kernelName1") || col.count("kernelName2");
      const bool tiles = col.count("tile1") || col.count("tile2");
      if (names && tiles) {
        // Two readings of a row's kernels: refused rather than one silently ignored.
        fail(file, line, static_cast<int>(col.count("tile1") ? f[col.at("tile1")].column : f[col.at("tile2")].column),
             col.count("tile1") ? "tile1" : "tile2",
             "the header has both kernelName1/kernelName2 (AITER's tuned tables) and tile1/tile2 columns: keep one "
             "pair");
      }
      if (col.count("kernelName1") && col.count("kernelName2")) {
        t.tile1_name = "kernelName1", t.tile2_name = "kernelName2";
      } else if (col.count("tile1") && col.count("tile2")) {
        t.tile1_name = "tile1", t.tile2_name = "tile2";
      } else {
        fail(file, line, 1, "kernelName1",
             "missing tile columns: expected kernelName1 and kernelName2 (or tile1 and tile2)");
      }
      continue;
    }
    if (f.size() != header.size()) {
      fail(file, line, f.back().column, "",
           fmt::format("row has {} fields, the header {}", f.size(), header.size()));
    }
    const auto at = [&](const std::string& c) -> const ConfigField& { return f[col.at(c)]; };
    // A shape no layer has (a zero dimension) never matches: refused, with
    // min 1, rather than left to sit in the table unused. (topk may exceed
    // expert: under expert parallelism AITER's expert is the GPU's own
    // experts, w1.shape[0], and topk all of a token's picks.)
    const auto num = [&](const std::string& c, std::uint32_t min, std::uint32_t max) {
      return number(at(c), c, min, max, file, line);
    };
    const auto text_of = [&](const std::string& c) {
      const ConfigField& v = at(c);
      if (v.text.empty()) fail(file, line, v.column, c, "column " + c + ": empty");
      return v.text;
    };
    KernelConfigRow r;
    r.line = line;
    r.cu_num = num("cu_num", 1, 65536);
    r.token = num("token", 1, kMaxDim);
    r.model_dim = num("model_dim", 1, kMaxDim);
    r.inter_dim = num("inter_dim", 1, kMaxDim);
    r.expert = num("expert", 1, 1u << 20);
    r.topk = num("topk", 1, 1u << 20);
    r.act_type = text_of("act_type");
    if (col.count("dtype")) r.dtype = text_of("dtype");
    r.q_dtype_a = text_of("q_dtype_a");
    r.q_dtype_w = text_of("q_dtype_w");
    r.q_type = text_of("q_type");
    if (col.count("use_g1u1")) r.use_g1u1 = flag(at("use_g1u1"), "use_g1u1", file, line);
    if (col.count("doweight_stage1")) r.doweight_stage1 = flag(at("doweight_stage1"), "doweight_stage1", file, line);
    r.block_m = num("block_m", 0, 256);
    // 0: AITER's tuner found no kernel for the shape (kept, never used:
    // lookup_kernel_config says so).
    // Any multiple of 16: AITER's older tuners timed blocks of 16, 32, 48,
    // ..., 160 (hsa/gfx942/fmoe_2stages/tune.py, its assembly stage-1
    // kernels of those M); a row outside powers of two runs AITER's kernels
    // only (kernel_request refuses it for ours).
    if (r.block_m != 0 && !valid_block_m(r.block_m, KernelCode::aiter)) {
      fail(file, line, at("block_m").column, "block_m",
           fmt::format("column block_m: must be {} (0: no kernel found), got {}", valid_block_m_text(KernelCode::aiter),
                       r.block_m));
    }
    r.block_m_column = at("block_m").column;
    r.ksplit = num("ksplit", 0, 64);
    r.tile1 = at(t.tile1_name).text;
    r.tile2 = at(t.tile2_name).text;
    r.tile1_column = at(t.tile1_name).column;
    r.tile2_column = at(t.tile2_name).column;
    if (col.count("run_1stage")) r.run_1stage = flag(at("run_1stage"), "run_1stage", file, line);
    // AITER's table is a dict on these columns (pandas set_index +
    // to_dict("index"), which raises on a repeated key, so AITER refuses any
    // repeat); here two rows that disagree are an error, two identical ones
    // harmless.
    const Key key{r.cu_num, r.token, r.model_dim, r.inter_dim, r.expert, r.topk, r.act_type, r.dtype,
                  r.q_dtype_a, r.q_dtype_w, r.q_type, r.use_g1u1 ? int(*r.use_g1u1) : -1,
                  r.doweight_stage1 ? int(*r.doweight_stage1) : -1};
    if (const auto it = seen.find(key); it != seen.end()) {
      KernelConfigRow& o = t.rows[it->second];
      // A row of no kernel found (block_m 0) gives way to one with a kernel,
      // whichever comes first, and conflicts with none.
      if (o.block_m == 0 || r.block_m == 0) {
        if (o.block_m == 0 && r.block_m != 0) o = std::move(r);
        continue;
      }
      if (o.block_m != r.block_m || o.ksplit != r.ksplit || o.tile1 != r.tile1 || o.tile2 != r.tile2 ||
          o.run_1stage != r.run_1stage) {
        fail(file, line, 1, "",
             fmt::format("duplicate key: line {} has the same cu_num, token, shape and formats with a different "
                         "block_m, ksplit, tiles or run_1stage",
                         o.line));
      }
      continue;
    }
    seen.emplace(key, t.rows.size());
    t.rows.push_back(std::move(r));
  }
  if (header.empty()) fail(file, 1, 0, "", "empty kernel config table (no header line)");
  return t;
}

KernelConfigTable read_kernel_config(const std::filesystem::path& path) {
  std::string text;
  try {
    text = util::read_input_file(path, util::InputKind::kernel_config);
  } catch (const util::InputFileError& e) {
    fail(path.string(), 0, 0, "", std::string("kernel config table ") + e.what());
  }
  return parse_kernel_config(text, path.string());
}

KernelConfigLookup lookup_kernel_config(const KernelConfigTable& table, const KernelConfigQuery& q) {
  KernelConfigLookup out;
  out.padded_token = aiter_padded_m(q.tokens);
  const std::string key = fmt::format(
      "cu_num {}, token {} (padded from {}), model_dim {}, inter_dim {}, expert {}, topk {}, {}, {}, format {}{}",
      q.cu_num, out.padded_token, q.tokens, q.model_dim, q.inter_dim, q.expert, q.topk, q.act_type, q.dtype,
      config::enum_name(q.format.dtype),
      q.format.quant == Quant::none ? std::string() : std::string(" ") + std::string(config::enum_name(q.format.quant)),
      q.doweight_stage1 ? ", doweight_stage1 1" : "");
  // fused_moe.py get_2stage_cfgs use_cfg(): fp8 block-scale layers with SiLU
  // and at most 128 routed rows never use the tuned table. Its fp8 is
  // dtypes.fp8, the GPU's own (FNUZ on gfx942, OCP on gfx950): a layer of
  // either flavour is bypassed, as the heuristic treats both as AITER's fp8.
  if (aiter_fp8(q.format.dtype) && q.format.quant == Quant::block_128 && q.act_type == "ActivationType.Silu" &&
      std::uint64_t{out.padded_token} * q.topk <= 128) {
    out.bypassed = true;
    out.detail = fmt::format("looked up {}: AITER bypasses its tuned table for fp8 block-scale SiLU layers with "
                             "token x topk <= 128 (fused_moe.py get_2stage_cfgs, use_cfg)",
                             key);
    return out;
  }
  std::size_t other_token = 0, other_format = 0, other_cu = 0, other_flags = 0;
  int no_kernel_line = 0;  // a matching row of block_m 0, if one (another spelling may follow)
  std::vector<std::string> formats;
  for (const KernelConfigRow& r : table.rows) {
    if (r.model_dim != q.model_dim || r.inter_dim != q.inter_dim || r.expert != q.expert || r.topk != q.topk ||
        r.act_type != q.act_type) {
      continue;
    }
    const auto f = aiter_format(r.q_dtype_a, r.q_dtype_w, r.q_type);
    if (!f || *f != q.format) {
      ++other_format;
      const std::string txt = aiter_format_text(r.q_dtype_a, r.q_dtype_w, r.q_type);
      if (std::find(formats.begin(), formats.end(), txt) == formats.end()) formats.push_back(txt);
      continue;
    }
    if (r.cu_num != q.cu_num) {
      ++other_cu;
      continue;
    }
    if ((!r.dtype.empty() && r.dtype != q.dtype) || (r.use_g1u1 && !*r.use_g1u1) ||
        (r.doweight_stage1 && *r.doweight_stage1 != q.doweight_stage1)) {
      ++other_flags;
      continue;
    }
    if (r.token != out.padded_token) {
      ++other_token;
      continue;
    }
    if (r.block_m == 0) {  // AITER's tuner found no kernel for this key
      if (no_kernel_line == 0) no_kernel_line = r.line;
      continue;
    }
    out.row = &r;
    out.detail = fmt::format("looked up {}: line {}", key, r.line);
    return out;
  }
  if (no_kernel_line != 0) {
    out.no_kernel_line = no_kernel_line;
    out.detail = fmt::format("looked up {}: line {} has block_m 0 (AITER's tuner found no kernel for it): not used",
                             key, no_kernel_line);
    return out;
  }
  std::string why = fmt::format("looked up {}: no row matched", key);
  if (other_token) why += fmt::format("; {} rows of this layer's key at other token counts", other_token);
  if (other_cu) why += fmt::format("; {} rows of this layer's shape and format for another cu_num", other_cu);
  if (other_flags) {
    why += fmt::format("; {} rows differ in dtype, use_g1u1 (tdmsim's layers are gated: 1) or doweight_stage1",
                       other_flags);
  }
  if (other_format) {
    why += fmt::format("; {} rows of this shape in other formats: ", other_format);
    for (std::size_t i = 0; i < formats.size(); ++i) why += (i ? ", " : "") + formats[i];
  }
  if (!other_token && !other_cu && !other_flags && !other_format) why += " (no row of this shape)";
  out.detail = std::move(why);
  return out;
}

namespace {

// A CK 2-stage GEMM's kernel name (moe_ck2stages_gemm1_256x32x64x128_...):
// the tile follows its gemm1_ / gemm2_.
bool ck_kernel_name(std::string_view name) {
  return name.find("gemm1_") != std::string_view::npos || name.find("gemm2_") != std::string_view::npos;
}

// The kernel's tile_m x tile_n in such a name: the first "_MxN" field
// (followed by '_', the mangled name's closing 'E', or the end).
std::string_view asm_stage_tile(std::string_view name) {
  for (std::size_t i = name.find('_'); i != std::string_view::npos; i = name.find('_', i + 1)) {
    std::size_t j = i + 1;
    const auto digits = [&] {
      const std::size_t from = j;
      while (j < name.size() && std::isdigit(static_cast<unsigned char>(name[j]))) ++j;
      return j > from;
    };
    if (!digits() || j >= name.size() || name[j] != 'x') continue;
    ++j;
    if (!digits()) continue;
    if (j == name.size() || name[j] == '_' || (name[j] == 'E' && j + 1 == name.size())) {
      return name.substr(i + 1, j - i - 1);
    }
  }
  return {};
}

// The whole number whose digits start at name[from], and the index after
// them; UINT64_MAX for one too large for 64 bits (still a number field, out
// of any count's range); none where no digit is there.
std::optional<std::pair<std::uint64_t, std::size_t>> number_at(std::string_view name, std::size_t from) {
  std::uint64_t n = 0;
  const char* const end = name.data() + name.size();
  const auto [next, ec] = std::from_chars(name.data() + std::min(from, name.size()), end, n);
  if (ec == std::errc::result_out_of_range) n = UINT64_MAX;
  else if (ec != std::errc{}) return std::nullopt;
  return std::pair{n, static_cast<std::size_t>(next - name.data())};
}

// The number of the first "_<N>tg" field of such a name (followed as the tile
// field is); none where there is no such field.
std::optional<std::uint64_t> asm_stage_tg_field(std::string_view name) {
  for (std::size_t i = name.find('_'); i != std::string_view::npos; i = name.find('_', i + 1)) {
    const auto num = number_at(name, i + 1);
    if (!num || name.substr(num->second, 2) != "tg") continue;
    const std::size_t j = num->second + 2;
    if (j == name.size() || name[j] == '_' || (name[j] == 'E' && j + 1 == name.size())) return num->first;
  }
  return std::nullopt;
}

// The workgroups a CU such a name gives: its _<N>tg field's N from 1 to
// kMaxTgPerCu; 0 where there is none (or N is out of that range).
std::uint32_t asm_stage_tg(std::string_view name) {
  const std::optional<std::uint64_t> n = asm_stage_tg_field(name);
  return n && *n >= 1 && *n <= kMaxTgPerCu ? static_cast<std::uint32_t>(*n) : 0;
}

// The numbers of an 'x'-separated run ("256x32x64x128", "32x256"): each a
// whole number from 1 to KernelTile::kMaxDim, nothing else between or after
// them; none for anything else (an empty run included).
std::optional<std::vector<std::uint32_t>> x_separated(std::string_view s) {
  if (s.empty()) return std::nullopt;
  std::vector<std::uint32_t> v;
  const char* p = s.data();
  const char* const end = s.data() + s.size();
  while (true) {
    std::uint32_t x = 0;
    const auto [next, ec] = std::from_chars(p, end, x);
    if (ec != std::errc{} || x == 0 || x > KernelTile::kMaxDim) return std::nullopt;
    v.push_back(x);
    if (next == end) return v;
    if (*next != 'x' || next + 1 == end) return std::nullopt;  // another character, or a trailing 'x'
    p = next + 1;
  }
}

// AITER's kernels that name no thread count run 256 threads a workgroup: the
// assembly kernels (bdx = 256 in asm_fmoe.cu, asm_moe_2stage.cu) and
// FlyDSL's MoE launchers (block=(256, 1, 1)).
constexpr std::uint32_t kAiterThreads = 256;

// A FlyDSL MoE kernel's name as AITER writes it (aiter/ops/flydsl,
// flydsl_kernel_name: flydsl_moe{stage}_a{a}_w{b}_{out}_t{M}x{N}x{K}, then
// `_{mode}` on stage 2 and, in later versions, further fields such as _bnt2,
// _xcd4, _kb2 or _sbm<S>), read field by field ('_'-separated).
struct FlydslName {
  std::uint64_t stage = 0;     // moe<stage>; 0 where that field is not "moe" and digits
  std::string_view weight;     // the w<W> field's W ("fp4", "fp8", "int4")
  std::string_view out;        // the field before the tile (the output dtype)
  std::string_view tile;       // "32x256x256"; empty where there is no such field
  std::string_view bad_tile;   // a t<...> field of other than three numbers
  bool reduce = false, atomic = false;  // stage-2 mode fields
  std::uint64_t sort_block = 0;         // _sbm<S>: the sort's block_m (0: none)
  std::vector<std::string_view> unread;  // other fields, which the model does not read
};

bool flydsl_kernel_name(std::string_view name) { return name.starts_with("flydsl_moe"); }

// Whether `field` is letter `c` then a whole number (sbm128: "sbm" then 128).
std::optional<std::uint64_t> prefixed_number(std::string_view field, std::string_view prefix) {
  if (!field.starts_with(prefix) || field.size() == prefix.size()) return std::nullopt;
  const auto num = number_at(field, prefix.size());
  if (!num || num->second != field.size()) return std::nullopt;
  return num->first;
}

FlydslName read_flydsl_name(std::string_view name) {
  std::vector<std::string_view> fields;
  for (std::string_view rest = name;;) {
    const std::size_t cut = rest.find('_');
    fields.push_back(rest.substr(0, cut));
    if (cut == std::string_view::npos) break;
    rest = rest.substr(cut + 1);
  }
  FlydslName f;
  if (fields.size() > 1) f.stage = prefixed_number(fields[1], "moe").value_or(0);
  std::size_t tile_at = fields.size();
  for (std::size_t i = 2; i < fields.size() && tile_at == fields.size(); ++i) {
    const std::string_view x = fields[i];
    if (x.size() < 2 || x[0] != 't' || !std::isdigit(static_cast<unsigned char>(x[1]))) continue;
    const bool run = std::all_of(x.begin() + 1, x.end(), [](char c) {
      return std::isdigit(static_cast<unsigned char>(c)) || c == 'x';
    });
    if (!run) continue;
    tile_at = i;
    (std::count(x.begin(), x.end(), 'x') == 2 ? f.tile : f.bad_tile) = x.substr(1);
  }
  bool seen_a = false, seen_w = false;
  for (std::size_t i = 2; i < tile_at; ++i) {
    const std::string_view x = fields[i];
    if (i + 1 == tile_at) f.out = x;
    else if (!seen_a && x.starts_with('a')) seen_a = true;
    else if (!seen_w && x.starts_with('w')) seen_w = true, f.weight = x.substr(1);
    else f.unread.push_back(x);
  }
  for (std::size_t i = tile_at + 1; i < fields.size(); ++i) {
    const std::string_view x = fields[i];
    if (x == "reduce") f.reduce = true;
    else if (x == "atomic") f.atomic = true;
    else if (const auto sbm = prefixed_number(x, "sbm")) f.sort_block = *sbm;
    else f.unread.push_back(x);
  }
  return f;
}

// How a FlyDSL stage-2 kernel combines: its mode (none: atomic, as its
// accumulate defaults to True), except that FlyDSL's 8-bit stage 2 with
// bf16 output accumulates whatever the mode (aiter/ops/flydsl moe_kernels.py
// _get_compiled_stage2: fp8 weights and bf16 out run f32 output with
// accumulate True). Both modes named is an error (machine then).
DownCombine flydsl_combine(const FlydslName& f) {
  if (f.reduce && f.atomic) return DownCombine::machine;
  if (f.reduce && !(f.weight.starts_with("fp8") && f.out == "bf16")) return DownCombine::reduce;
  return DownCombine::atomic;
}

}  // namespace

bool aiter_asm_stage1_name(std::string_view name) { return name.find("fmoe_stage1_") != std::string_view::npos; }

namespace {

// The distinct N of a CK kernel name's pipeline fields: _vN_ inside the name
// or _vN at its end (N whole; a CK name carries one).
std::vector<std::uint64_t> ck_pipeline_versions(std::string_view name) {
  std::vector<std::uint64_t> out;
  for (auto i = name.find("_v"); i != std::string_view::npos; i = name.find("_v", i + 1)) {
    const auto num = number_at(name, i + 2);
    if (!num || (num->second != name.size() && name[num->second] != '_')) continue;
    if (std::find(out.begin(), out.end(), num->first) == out.end()) out.push_back(num->first);
  }
  return out;
}

}  // namespace

AiterTileReading read_aiter_tile(std::string_view name, std::uint32_t block_m, const std::optional<AiterFormat>& format,
                                 bool second) {
  AiterTileReading out;
  const auto refuse = [&](std::string why) {
    out.error = std::move(why);
    return out;
  };
  if (name.empty()) {
    out.reading = "empty: the default tile of block_m";
    return out;
  }
  std::string_view s = name;
  const bool asm_stage1 = aiter_asm_stage1_name(name);
  bool flydsl = false;
  std::uint64_t sort_block = 0;  // a FlyDSL name's _sbm<S>
  if (asm_stage1) {
    // AITER's assembly stage-1 kernels: 256 threads, tile_m sorted rows
    // (block_m) by tile_n columns of each of gate and up (asm_moe_2stage.cu
    // moe_stage1_g1u1: bdx 256, gdx = inter_dim / tile_n). As the nearest
    // tile program, the CK-style tile of that M and N.
    if (second) return refuse("an assembly stage-1 kernel in the stage-2 column");
    s = asm_stage_tile(name);
    if (s.empty()) return refuse("an assembly stage-1 kernel whose name has no tile_m x tile_n field");
    out.workgroups_per_cu = asm_stage_tg(name);
    const std::optional<std::uint64_t> tg = asm_stage_tg_field(name);
    out.reading = out.workgroups_per_cu != 0
                      ? fmt::format("AITER assembly stage-1 kernel (tile_m x tile_n, {} workgroups a CU)",
                                    out.workgroups_per_cu)
                  : tg ? fmt::format("AITER assembly stage-1 kernel (tile_m x tile_n; its _{}tg is not 1 to {}: "
                                     "workgroups a CU by the tile's resources)",
                                     *tg == UINT64_MAX ? std::string("<N>") : std::to_string(*tg), kMaxTgPerCu)
                       : std::string("AITER assembly stage-1 kernel (tile_m x tile_n)");
    out.assembly_stage1 = true;
  } else if (flydsl_kernel_name(name)) {
    // FlyDSL's MoE GEMMs, AITER's other 2-stage kernels: kAiterThreads a
    // workgroup, tile_m sorted rows (MPerBlock = tile_m) by tile_n columns
    // (stage 1: of gate and of up, as CK's NPerBlock; stage 2: of H) by
    // tile_k of K a step, weights pre-shuffled into registers as CK's
    // (aiter_gemm_resources estimates both families so).
    const FlydslName f = read_flydsl_name(name);
    if (f.stage != 1 && f.stage != 2) {
      return refuse(fmt::format("kernel '{}' is not a FlyDSL MoE stage (flydsl_moe1_ or flydsl_moe2_)", name));
    }
    if (!f.bad_tile.empty()) {
      return refuse(fmt::format("FlyDSL kernel '{}': its tile field t{} is not M x N x K", name, f.bad_tile));
    }
    if (f.tile.empty()) {
      return refuse(fmt::format("FlyDSL kernel '{}' has no _t<M>x<N>x<K> tile field", name));
    }
    if ((f.stage == 2) != second) {
      return refuse(fmt::format("a FlyDSL stage-{} kernel in the stage-{} column", f.stage, second ? 2 : 1));
    }
    if (f.reduce && f.atomic) {
      return refuse(fmt::format("FlyDSL kernel '{}' names both modes, _reduce and _atomic", name));
    }
    s = f.tile;
    flydsl = true;
    sort_block = f.sort_block;
    if (second) out.combine = flydsl_combine(f);
    std::string notes;
    if (second && f.reduce && out.combine == DownCombine::atomic) {
      notes += "; FlyDSL's 8-bit stage 2 with bf16 output adds atomically (in fp32) whatever its mode";
    }
    if (!f.unread.empty()) notes += fmt::format("; fields not read: {}", fmt::join(f.unread, ", "));
    out.reading = second ? fmt::format("FlyDSL stage-2 kernel (tile_m x tile_n x tile_k; combine: {}{})",
                                       down_combine_text(out.combine), notes)
                         : fmt::format("FlyDSL stage-1 kernel (tile_m x tile_n x tile_k{})", notes);
  } else if (!ck_kernel_name(name) &&
             (std::isalpha(static_cast<unsigned char>(name.front())) || name.front() == '_')) {
    // Another kernel name (AITER's other assembly kernels): no tile in it;
    // AITER runs that kernel, and the nearest thing the model has is the
    // default tile, as for an empty name.
    out.reading = "no tile tdmsim reads (an assembly kernel's name, say): the default tile of block_m";
    return out;
  } else {
    // The numbers of the first run of 'x'-separated numbers after the CK
    // kernel prefix (moe_ck2stages_gemm1_256x32x64x128_1x4_...) or of the name.
    for (const std::string_view p : {std::string_view("gemm1_"), std::string_view("gemm2_")}) {
      if (const auto i = s.find(p); i != std::string_view::npos) {
        s = s.substr(i + p.size());
        s = s.substr(0, s.find('_'));
        out.reading = "CK kernel name";
        // Its pipeline: v1 one LDS buffer, v2/v3 two (lds_buffers).
        const std::vector<std::uint64_t> versions = ck_pipeline_versions(name);
        const auto field = [](std::uint64_t n) {
          return n == UINT64_MAX ? std::string("_v<N>") : fmt::format("_v{}", n);
        };
        if (versions.size() > 1) {
          return refuse(fmt::format("kernel '{}' names two pipelines ({} and {}): a CK kernel name carries one",
                                    name, field(versions[0]), field(versions[1])));
        }
        if (versions.size() == 1 && (versions[0] < 1 || versions[0] > 3)) {
          out.reading += fmt::format(" (its pipeline {} is not CK's v1, v2 or v3: LDS buffers as for a name "
                                     "without one)",
                                     field(versions[0]));
        } else if (versions.size() == 1) {
          out.lds_buffers = versions[0] == 1 ? 1 : 2;
        }
        break;
      }
    }
  }
  const std::optional<std::vector<std::uint32_t>> dims = x_separated(s);
  if (flydsl && !dims) {
    return refuse(fmt::format("FlyDSL kernel '{}': its tile {} is not three whole numbers from 1 to {}", name, s,
                              KernelTile::kMaxDim));
  }
  if (!dims || (dims->size() != 2 && dims->size() != 4 && !flydsl) || (asm_stage1 && dims->size() != 2)) {
    return refuse(fmt::format("tile '{}' is not a tile name tdmsim maps to a tile program (THREADSxMxNxK as "
                              "CK names its tiles, MxN for an assembly kernel, a moe_ck2stages_gemm kernel name, "
                              "an assembly fmoe_stage1_ kernel name or a flydsl_moe kernel name)",
                              name));
  }
  // FlyDSL's M x N x K: its threads in front, as CK's names give them.
  std::vector<std::uint32_t> v = *dims;
  if (flydsl) v.insert(v.begin(), kAiterThreads);
  if (out.reading.empty()) out.reading = v.size() == 4 ? "CK tile (threads x M x N x K)" : "assembly M x N";
  // An assembly kernel's MxN: K of the default tile for M in the row's
  // format (the bf16 default's LDS bytes: x2 for 8-bit, x4 for 4-bit).
  const auto k_of = [&](std::uint32_t m) {
    return format ? default_tile(m, format->quant, format->dtype, format->weight_dtype).k : default_tile(m).k;
  };
  const KernelTile t =
      v.size() == 4 ? KernelTile{v[0], v[1], v[2], v[3]} : KernelTile{kAiterThreads, v[0], v[1], k_of(v[0])};
  const auto bad = [&](const std::string& why) {
    return refuse(fmt::format("tile '{}' ({}x{}x{}x{}): {}", name, t.threads, t.m, t.n, t.k, why));
  };
  if (sort_block != 0 && sort_block != t.m) {
    // FlyDSL's _sbm<S>: the sort's blocks of S rows cut into tiles of M
    // (each a workgroup of part of a block), which the model's layout, one
    // block a workgroup row, does not run.
    return bad(fmt::format("FlyDSL's sort block _sbm{} differs from its tile_m {}: a workgroup of part of a "
                           "sorted block is not modelled",
                           sort_block, t.m));
  }
  if (t.m != block_m) return bad(fmt::format("its M differs from the row's block_m {}", block_m));
  if (t.threads % 32 != 0) return bad("threads must be a multiple of 32");
  if (t.n % 16 != 0 || t.k % 16 != 0) return bad("N and K must be multiples of 16");
  out.tile = t;
  return out;
}

bool aiter_one_stage_name(std::string_view name) {
  // (fmoe_stage1_ / fmoe_stage2_: the 2-stage path's assembly kernels)
  return name.find("fmoe_") != std::string_view::npos && name.find("fmoe_stage") == std::string_view::npos &&
         !ck_kernel_name(name) &&
         (name.find("_g1u1") != std::string_view::npos || name.find("_g1u0") != std::string_view::npos);
}

AiterTileReading read_aiter_one_stage_kernel(std::string_view name, std::uint32_t block_m,
                                             const std::optional<AiterFormat>& format) {
  AiterTileReading out;
  if (name.empty()) {
    out.reading = "empty: AITER's heuristic 1-stage kernel";
    return out;
  }
  if (!aiter_one_stage_name(name)) {
    out.reading = "not an AITER 1-stage assembly kernel name (fmoe_..._g1u1_..._MxN): AITER's heuristic 1-stage kernel";
    return out;
  }
  // The flat and emsort kernels take a (token, slot) row a workgroup over an
  // inter_dim / subGU_n x topk x tokens grid, without the sorted blocks
  // (asm_fmoe.cu flat_mode; AITER's heuristic skips them): not modelled.
  if (name.find("_flat_") != std::string_view::npos || name.find("_emsort_") != std::string_view::npos) {
    out.reading = "an AITER flat or emsort 1-stage kernel (a token row a workgroup, no sorted blocks: not modelled): "
                  "AITER's heuristic 1-stage kernel";
    return out;
  }
  const std::optional<std::vector<std::uint32_t>> mn = x_separated(asm_stage_tile(name));
  if (!mn || mn->size() != 2) {
    // (emsort's 16xstk_t32_c8 and the like: no subGU_m x subGU_n field)
    out.reading = "an AITER 1-stage kernel name with no subGU_m x subGU_n field: AITER's heuristic 1-stage kernel";
    return out;
  }
  const std::uint32_t m = (*mn)[0], n = (*mn)[1];
  if (m != block_m) {
    out.error = fmt::format("1-stage kernel '{}' (subGU_m {} x subGU_n {}): its subGU_m differs from the row's "
                            "block_m {} (the kernel takes subGU_m rows of the sort's blocks of block_m: AITER's "
                            "tuner pairs the two)",
                            name, m, n, block_m);
    return out;
  }
  if (n % 16 != 0 || n < kAiterOneStageMinSubGuN) {
    out.reading = fmt::format("an AITER 1-stage kernel of subGU_n {} (below {} or not a multiple of 16: not "
                              "modelled): AITER's heuristic 1-stage kernel",
                              n, kAiterOneStageMinSubGuN);
    return out;
  }
  out.tile = KernelTile{kAiterOneStageThreads, m, n, aiter_one_stage_k(format ? format->dtype : DType::bf16)};
  out.reading = "AITER 1-stage assembly kernel (subGU_m x subGU_n)";
  return out;
}

AiterTileReading aiter_one_stage_kernel_tile(const KernelConfigTable& table, const KernelConfigRow& row) {
  AiterTileReading r =
      read_aiter_one_stage_kernel(row.tile1, row.block_m, aiter_format(row.q_dtype_a, row.q_dtype_w, row.q_type));
  if (!r.error.empty()) {
    fail(table.file, row.line, row.tile1_column, table.tile1_name, fmt::format("column {}: {}", table.tile1_name, r.error));
  }
  return r;
}

void require_block_m_for(const KernelConfigTable& table, const KernelConfigRow& row, KernelCode source) {
  if (row.block_m == 0 || valid_block_m(row.block_m, source)) return;
  fail(table.file, row.line, row.block_m_column, "block_m",
       fmt::format("column block_m: {} runs AITER's kernels only (kernel.source aiter, on a CDNA3 or CDNA4 "
                   "machine); the project's kernels take 16, 32, 64, 128 or 256",
                   row.block_m));
}

AiterTileReading read_row_tile(const KernelConfigTable& table, const KernelConfigRow& row, bool second) {
  const std::string& name = second ? row.tile2 : row.tile1;
  const std::string& column = second ? table.tile2_name : table.tile1_name;
  const int at = second ? row.tile2_column : row.tile1_column;
  const AiterTileReading r =
      read_aiter_tile(name, row.block_m, aiter_format(row.q_dtype_a, row.q_dtype_w, row.q_type), second);
  if (!r.error.empty()) fail(table.file, row.line, at, column, fmt::format("column {}: {}", column, r.error));
  return r;
}

}  // namespace tdmsim::plan
