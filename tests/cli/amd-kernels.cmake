# The HIP kernels compiled for AMD CDNA with Debian's hipcc (HIP 5.2, LLVM 15)
# for each target of TDMSIM_AMD_GPU_TARGETS (kernels/CMakeLists.txt), then
# their code objects disassembled and checked against the committed per-kernel
# summaries validation/data/amd/kernels-<target>.csv (MFMA type and count in
# each GEMM main loop, no scratch or spills; docs/gpu-kernels.md "AMD CDNA").
# Both skip (77) where hipcc or the LLVM 15 tools are absent. Nothing runs on
# a GPU: there is no AMD GPU here.
string(REPLACE ";" "," tdmsim_amd_targets_csv "${TDMSIM_AMD_GPU_TARGETS}")
set(TDMSIM_AMD_KERNEL_DIR ${CMAKE_CURRENT_BINARY_DIR}/kernels-amd)
add_test(NAME kernels.compile_for_amd
         COMMAND bash ${PROJECT_SOURCE_DIR}/scripts/compile-kernels-amd.sh ${TDMSIM_AMD_KERNEL_DIR}
                 ${tdmsim_amd_targets_csv})
# One processor: the sources compile in parallel for the first seconds, then
# the GEMM source alone (one clang process, each target in turn) for minutes;
# holding both CI cores would leave one idle all that time.
set_tests_properties(kernels.compile_for_amd PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 1500
                     FIXTURES_SETUP amd_code_objects)
add_test(NAME kernels.disassemble_amd
         COMMAND bash ${PROJECT_SOURCE_DIR}/scripts/check-amd-kernels.sh ${TDMSIM_AMD_KERNEL_DIR}
                 ${tdmsim_amd_targets_csv})
set_tests_properties(kernels.disassemble_amd PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 600
                     FIXTURES_REQUIRED amd_code_objects)
# The runner build script's own promises, with a stand-in compiler (runs
# anywhere, in a second): a killed build's scratch folder is removed by the
# next, the compilers get a private TMPDIR, OUTPUT is whole or absent.
add_test(NAME kernels.runner_build_scratch
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cli/runner_scratch_check.sh
                 ${CMAKE_CURRENT_BINARY_DIR}/runner-build-scratch)
