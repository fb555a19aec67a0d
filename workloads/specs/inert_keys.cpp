#include "workloads/specs/inert_keys.h"

#include <algorithm>

#include "workloads/config/reader.h"

namespace tdmsim {

void check_inert(const std::vector<InertKey>& inert, config::Checker& c, const InertBelow& inert_below) {
  for (const auto& k : inert) {
    const config::Location* at = c.set_where(k.key);
    if (at == nullptr) continue;
    const config::Location* gov = c.set_where(k.governing);
    if (gov == nullptr || c.place(gov->file) >= c.place(at->file)) {
      c.fail(k.key, k.message, {k.governing});
      continue;
    }
    const auto below = inert_below(at->file);
    if (std::any_of(below.begin(), below.end(), [&](const InertKey& b) { return b.key == k.key; })) {
      c.fail(k.key, k.message);
    }
  }
}

}  // namespace tdmsim
