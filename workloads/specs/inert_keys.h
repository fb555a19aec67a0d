// Keys whose value cannot change a run under the file's other keys (a routing
// source's parameter under another source, L1 keys of a CU without an L1):
// the loader refuses them, as every key must change the model or be refused.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace tdmsim {

namespace config {
class Checker;
}

// An inert key, the key that makes it so and why.
struct InertKey {
  std::string key;
  std::string governing;
  std::string message;
  std::string applies;  // where the key changes something ("routing.source is zipf")
};

// The keys of a spec's files as the files `file` and its bases alone make it
// (without the overlays above it): Loader::load reads them again.
using InertBelow = std::function<std::vector<InertKey>(const std::string& file)>;

// Refuses each of `inert` that a file set, unless an overlay of that file set
// its governing key and so switched it off (an overlay that switches a base's
// routing source keeps the base's keys for the other source): a key inert in
// its own file and bases already (`inert_below`) is refused there, since an
// overlay restating the governing value switched nothing off.
void check_inert(const std::vector<InertKey>& inert, config::Checker& c, const InertBelow& inert_below);

}  // namespace tdmsim
