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
