#include "workloads/config/reference.h"

namespace tdmsim::config {
namespace {
// Pipes would break a Markdown table cell.
std::string cell(std::string s) {
  std::string out;
  for (char c : s) {
    if (c == '|') out += "\\|";
    else out += c;
  }
  return out;
}
}  // namespace

std::vector<ReferenceRow> fold_section(std::vector<ReferenceRow> rows, std::string_view key,
                                       std::string_view doc) {
  const std::string inside = std::string(key) + ".";
  std::vector<ReferenceRow> out;
  for (auto& r : rows) {
    if (r.key.compare(0, inside.size(), inside) == 0) continue;
    if (r.key == key) r.doc = std::string(doc);
    out.push_back(std::move(r));
  }
  return out;
}

std::string reference_markdown(std::string_view title, std::string_view intro,
                               const std::vector<ReferenceRow>& rows) {
  std::string md = "## " + std::string(title) + "\n\n" + std::string(intro) + "\n\n";
  md += "| key | type | default | range | description |\n";
  md += "|---|---|---|---|---|\n";
  for (const auto& r : rows) {
    if (r.is_section) {
      md += "| **`" + r.key + "`** | " + cell(r.type) + " | " + cell(r.default_text) + " | | " +
            cell(r.doc) + " |\n";
    } else {
      md += "| `" + r.key + "` | " + cell(r.type) + " | " + cell(r.default_text) + " | " +
            cell(r.range) + " | " + cell(r.doc) + " |\n";
    }
  }
  return md + "\n";
}

}  // namespace tdmsim::config
