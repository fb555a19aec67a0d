// The shipped machines read through the loader, in one file, so the plan tests
// that only build scenarios in memory compile without it.
#include "plan_test_util.h"

#include "workloads/config/loader.h"

namespace tdmsim::plan::test {

MachineSpec shipped_machine(const std::string& name) {
  const config::Loader loader({kWorkloads});
  return loader.machine(kWorkloads / "machines" / (name + ".yaml")).spec;
}

}  // namespace tdmsim::plan::test
