#include "apps/tdmsim/csv_field.h"

namespace tdmsim::cli {

std::string csv_field(std::string s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

}  // namespace tdmsim::cli
