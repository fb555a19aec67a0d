// The trace routing source: a recorded top-k per token in the plain-text
// format of docs/moe-plan.md "Routing trace format". Input is never trusted:
// every problem is reported at its trace line and column.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <string_view>

#include "descriptors/plan/routing.h"

namespace tdmsim::plan {
namespace {

constexpr std::string_view kMagic = "# tdmsim-routing-trace";

struct TraceField {
  std::string_view text;
  int column = 0;  // 1-based
};

// Whitespace-separated fields of `line` before any '#' comment.
std::vector<TraceField> split_fields(std::string_view line) {
  std::vector<TraceField> out;
  const std::size_t end = std::min(line.find('#'), line.size());
  std::size_t i = 0;
  while (i < end) {
    while (i < end && (line[i] == ' ' || line[i] == '\t')) ++i;
    const std::size_t start = i;
    while (i < end && line[i] != ' ' && line[i] != '\t') ++i;
    if (i > start) out.push_back({line.substr(start, i - start), static_cast<int>(start) + 1});
  }
  return out;
}

template <class T>
bool parse_number(std::string_view text, T& value) {
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  return ec == std::errc{} && ptr == end;
}

struct Header {
  std::uint32_t experts = 0;
  std::uint32_t top_k = 0;
};

// Reads `# tdmsim-routing-trace v1 experts=E top_k=K`, reporting at line 1.
Header parse_header(std::string_view line, const std::string& name, const ModelSpec& model,
                    config::Diagnostics& diags) {
  const auto fail = [&](int column, const std::string& message) {
    diags.add({name, 1, column}, "", message);
  };
  Header h;
  if (!line.starts_with(kMagic)) {
    fail(1, "not a routing trace: the first line must be '# tdmsim-routing-trace v1 experts=E "
            "top_k=K'");
    return h;
  }
  const std::vector<TraceField> fields = split_fields(line.substr(1));  // skip the '#'
  bool version = false;
  bool have_experts = false;
  bool have_top_k = false;
  for (std::size_t i = 1; i < fields.size(); ++i) {  // fields[0] is the magic word
    const TraceField& f = fields[i];
    const int column = f.column + 1;
    if (f.text == "v1") {
      version = true;
      continue;
    }
    const std::size_t eq = f.text.find('=');
    const std::string_view key = f.text.substr(0, eq);
    std::uint32_t value = 0;
    if (eq == std::string_view::npos || !parse_number(f.text.substr(eq + 1), value)) {
      fail(column, "expected 'v1', 'experts=N' or 'top_k=N', got '" + std::string(f.text) + "'");
    } else if (key == "experts") {
      h.experts = value;
      have_experts = true;
    } else if (key == "top_k") {
      h.top_k = value;
      have_top_k = true;
    } else {
      fail(column, "unknown header key '" + std::string(key) + "' (expected experts or top_k)");
    }
  }
  if (!version) fail(1, "unsupported or missing trace version: this reader understands v1");
  if (!have_experts || !have_top_k) fail(1, "the header must give experts=E and top_k=K");
  if (have_experts && h.experts != model.experts) {
    fail(1, "trace has experts=" + std::to_string(h.experts) + " but model " + model.name +
                " has " + std::to_string(model.experts));
  }
  if (have_top_k && h.top_k != model.top_k) {
    fail(1, "trace has top_k=" + std::to_string(h.top_k) + " but model " + model.name +
                " has top_k " + std::to_string(model.top_k));
  }
  return h;
}

}  // namespace

Routing parse_trace(std::istream& in, const std::string& name, const ModelSpec& model,
                    std::uint32_t tokens, std::uint64_t seed) {
  config::Diagnostics diags;
  std::string line;
  if (!std::getline(in, line)) {
    diags.add({name, 1, 0}, "", "empty routing trace (no header line)");
    diags.throw_if_any();
  }
  if (!line.empty() && line.back() == '\r') line.pop_back();
  parse_header(line, name, model, diags);
  diags.throw_if_any();  // a wrong header would make every line below wrong too

  const std::uint32_t k = model.top_k;
  Routing r;
  r.ids.resize(std::size_t(tokens) * k);
  r.weights.resize(std::size_t(tokens) * k);
  int weighted = -1;  // unknown until the first entry: 1 = id:weight, 0 = id only
  std::uint32_t t = 0;
  int line_no = 1;
  int last_data_line = 1;
  while (std::getline(in, line)) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const std::vector<TraceField> fields = split_fields(line);
    if (fields.empty()) continue;  // blank or comment line
    last_data_line = line_no;
    const auto fail = [&](int column, const std::string& message) {
      diags.add({name, line_no, column}, "", message);
    };
    if (t >= tokens) {
      fail(1, "more token lines than the scenario's tokens (" + std::to_string(tokens) + ")");
      break;
    }
    if (fields.size() != k) {
      fail(1, "token " + std::to_string(t) + " has " + std::to_string(fields.size()) +
                  " experts, top_k is " + std::to_string(k));
    }
    for (std::size_t j = 0; j < std::min<std::size_t>(fields.size(), k); ++j) {
      const TraceField& f = fields[j];
      const std::size_t colon = f.text.find(':');
      const std::string_view id_text = f.text.substr(0, colon);
      std::uint32_t id = 0;
      std::uint32_t* const token_ids = &r.ids[std::size_t(t) * k];
      const bool is_number = parse_number(id_text, id);
      if (!is_number) {
        fail(f.column, "bad expert id '" + std::string(id_text) + "'");
      } else if (id >= model.experts) {
        fail(f.column, "expert " + std::to_string(id) + " does not exist (experts 0.." +
                           std::to_string(model.experts - 1) + ")");
      } else if (std::find(token_ids, token_ids + j, id) != token_ids + j) {
        fail(f.column, "expert " + std::to_string(id) + " appears twice in token " +
                           std::to_string(t));
      }
      // A bad entry must not look like a repeat of a later one.
      token_ids[j] = is_number && id < model.experts ? id : kRemoteExpert;
      const int has_weight = colon == std::string_view::npos ? 0 : 1;
      if (weighted < 0) weighted = has_weight;
      if (has_weight != weighted) {
        fail(f.column, "entries with and without ':weight' are mixed; give a weight on every "
                       "entry or on none");
      } else if (has_weight) {
        const std::string_view w_text = f.text.substr(colon + 1);
        double w = 0.0;
        // Weights are kept as fp32 (the plan's and the kernels' format): a
        // value beyond its range would become infinite there.
        if (!parse_number(w_text, w) || !std::isfinite(w) || w < 0.0 ||
            w > static_cast<double>(std::numeric_limits<float>::max())) {
          fail(f.column + static_cast<int>(colon) + 1,
               "bad weight '" + std::string(w_text) + "' (expected a finite number >= 0, at most 3.4e38: " +
                   "weights are fp32)");
        }
        r.weights[std::size_t(t) * k + j] = static_cast<float>(w);
      }
    }
    ++t;
  }
  if (t < tokens) {
    diags.add({name, last_data_line, 0}, "",
              "trace has " + std::to_string(t) + " token lines, the scenario has tokens: " +
                  std::to_string(tokens));
  }
  diags.throw_if_any();
  if (weighted != 1) {
    const Gate gate = Gate::from_model(model);
    for (std::uint32_t i = 0; i < tokens; ++i) {
      synthetic_weights(gate, model.experts, seed, i,
                        std::span(r.weights).subspan(std::size_t(i) * k, k));
    }
  }
  return r;
}

}  // namespace tdmsim::plan
