#!/usr/bin/env bash
# fuzz.yaml_config_loader_guard: tests/fuzz/run_fuzz.sh builds yaml_config from
# one unity file of every source but workloads/config/loader.cpp, which it
# compiles beside it. Where the loader is not at that path (moved or renamed),
# the script must stop, exit 2, naming it, and build nothing, rather than
# compile a fuzzer without the loader. Run on a copy of the script in a tree
# without the loader.
#   loader_guard_check.sh WORKDIR     (run_fuzz.sh checks the tree before the
#   compiler, so this needs no clang; 77 is passed on should that change)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
work=${1:?usage: loader_guard_check.sh WORKDIR}
rm -rf "$work"
mkdir -p "$work/tests/fuzz" "$work/workloads/config" "$work/workloads/specs" "$work/workloads/util"
cp "$root/tests/fuzz/run_fuzz.sh" "$work/tests/fuzz/"
for d in config specs util; do cp "$root/workloads/$d"/*.cpp "$work/workloads/$d/"; done
[ -f "$work/workloads/config/loader.cpp" ] || { echo "FAIL: workloads/config/loader.cpp is not where run_fuzz.sh expects it"; exit 1; }
rm "$work/workloads/config/loader.cpp"
rc=0
bash "$work/tests/fuzz/run_fuzz.sh" "$work/out" 1 yaml_config > "$work/stdout" 2> "$work/stderr" || rc=$?
if [ "$rc" -eq 77 ]; then
  cat "$work/stdout"
  exit 77
fi
fail=0
[ "$rc" -eq 2 ] || { echo "FAIL: exit $rc, expected 2"; fail=1; }
grep -q "workloads/config/loader.cpp, the source compiled beside the unity file, does not exist" "$work/stderr" ||
  { echo "FAIL: stderr does not name the missing loader:"; cat "$work/stderr"; fail=1; }
if compgen -G "$work/out/obj/*.o" > /dev/null || [ -e "$work/out/fuzz_yaml_config" ]; then
  echo "FAIL: something was compiled before the script stopped"; fail=1
fi
[ "$fail" -eq 0 ] && echo "run_fuzz.sh stops (exit 2) naming the missing loader; nothing compiled"
exit "$fail"
