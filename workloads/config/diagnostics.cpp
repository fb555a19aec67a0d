#include "workloads/config/diagnostics.h"

#include <algorithm>
#include <numeric>

namespace tdmsim::config {

std::string display_path(const std::filesystem::path& p) { return p.lexically_normal().string(); }

std::string Diagnostic::to_string() const {
  // A command-line option's value (where.file "--machine", no line): said as
  // tdmsim's own errors are, without the key the option already names.
  if (where.line == 0 && where.file.starts_with("--")) return "tdmsim: error: " + where.file + ": " + message;
  std::string out = where.file.empty() ? std::string("<input>") : where.file;
  if (where.line > 0) {
    out += ":" + std::to_string(where.line);
    if (where.column > 0) out += ":" + std::to_string(where.column);
  }
  out += ": ";
  if (!key.empty()) out += key + ": ";
  out += message;
  return out;
}

std::string printable(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (s.substr(i, 3) == "\xef\xbb\xbf") {  // a byte-order mark: invisible, yet part of the text
      out += "\\ufeff";
      i += 2;
    } else if ((c < 0x20 && c != '\t' && c != '\n') || c == 0x7f) {
      static constexpr char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    } else {
      out += s[i];
    }
  }
  return out;
}

namespace {
std::string join(const std::vector<Diagnostic>& ds) {
  std::string out;
  for (const auto& d : ds) {
    if (!out.empty()) out += '\n';
    out += d.to_string();
  }
  return out;
}
}  // namespace

namespace {
// Every diagnostic's file, key and message made printable here, whoever
// built it (Diagnostics::add, or a ConfigError thrown at once).
std::vector<Diagnostic> printable_all(std::vector<Diagnostic> d) {
  for (auto& x : d) {
    x.where.file = printable(x.where.file);
    x.key = printable(x.key);
    x.message = printable(x.message);
  }
  return d;
}
}  // namespace

ConfigError::ConfigError(std::vector<Diagnostic> diagnostics)
    : ConfigError(printable_all(std::move(diagnostics)), 0) {}

ConfigError::ConfigError(std::vector<Diagnostic> printable_diagnostics, int)
    : std::runtime_error(join(printable_diagnostics)), diagnostics_(std::move(printable_diagnostics)) {}

void Diagnostics::add(Location where, std::string key, std::string message) {
  if (items_.size() < kMaxReported) {
    items_.push_back({std::move(where), std::move(key), std::move(message)});
  }
}

void Diagnostics::throw_if_any() const {
  if (items_.empty()) return;
  // Said once: the same error at the same place (an axis value refused at
  // every point that takes it) is one line, not one per point. (Kept in
  // items_ all the same: a caller tells a failed step by items_ growing.)
  std::vector<Diagnostic> once;
  for (const auto& d : items_) {
    const bool again = std::any_of(once.begin(), once.end(), [&](const Diagnostic& o) {
      return o.where.line == d.where.line && o.where.column == d.where.column && o.key == d.key &&
             o.where.file == d.where.file && o.message == d.message;
    });
    if (!again) once.push_back(d);
  }
  throw ConfigError(std::move(once));
}

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  std::iota(row.begin(), row.end(), std::size_t{0});
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diag = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0u : 1u)});
      diag = up;
    }
  }
  return row[b.size()];
}

std::string did_you_mean(std::string_view word, const std::vector<std::string>& candidates) {
  const std::string* best = nullptr;
  std::size_t best_d = 0;
  for (const auto& c : candidates) {
    const std::size_t d = edit_distance(word, c);
    if (best == nullptr || d < best_d) {
      best = &c;
      best_d = d;
    }
  }
  // Close means: at most a third of the word changed (and at least one edit allowed).
  const std::size_t limit = std::max<std::size_t>(2, word.size() / 3);
  if (best == nullptr || best_d > limit) return {};
  return " (did you mean '" + *best + "'?)";
}

}  // namespace tdmsim::config
