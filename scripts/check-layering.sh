#!/usr/bin/env bash
# Fails if an #include points up or across the layer order (docs/architecture.md):
#   workloads < isa < descriptors < sim < kernels < validation
# and if SystemC appears outside sim/ or HIP inside sim/.
set -euo pipefail
root="${1:-$(dirname "$0")/..}"
cd "$root"
layers=(workloads isa descriptors sim kernels validation)
status=0
for i in "${!layers[@]}"; do
  layer=${layers[$i]}
  [ -d "$layer" ] || continue
  # Layers this one must not include: every layer above it.
  for j in "${!layers[@]}"; do
    [ "$j" -gt "$i" ] || continue
    above=${layers[$j]}
    if grep -rnE "#include +\"${above}/" "$layer" --include='*.h' --include='*.cpp' --include='*.hip' 2>/dev/null; then
      echo "layering: ${layer}/ must not include ${above}/ (dependencies point downward)"; status=1
    fi
  done
done
# kernels/ must stay free of SystemC; sim/ free of HIP; SystemC only in sim/.
if grep -rnE '#include +<(systemc|tlm)' --include='*.h' --include='*.cpp' --include='*.hip' \
     workloads isa descriptors kernels validation apps capi python 2>/dev/null; then
  echo "layering: SystemC may only be included under sim/"; status=1
fi
if grep -rnE '#include +[<"]hip/' sim 2>/dev/null; then
  echo "layering: sim/ must not include HIP"; status=1
fi
[ "$status" -eq 0 ] && echo "layering: ok"
exit "$status"
