// One CSV field as the sweep's results.csv and sensitivity.csv write it.
#pragma once

#include <string>

namespace tdmsim::cli {

// `s` as one CSV field: quoted (inner quotes doubled, RFC 4180) only when it
// holds a comma, a quote or a line break, so plain values stay unquoted.
std::string csv_field(std::string s);

}  // namespace tdmsim::cli
