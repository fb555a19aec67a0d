# Our AMD kernels' main-loop instruction mix in the model, kernel.source, and
# their LDS in the plan (docs/moe-timing.md "CDNA main-loop issue";
# docs/moe-plan.md "Kernel heuristic", its item **LDS on AMD**). The fast check
# that the model's table is the committed summaries' is the Catch2 case
# sim."the model's AMD main-loop table is the disassembly summaries'" (no hipcc
# needed).

# The model's table against summaries made from freshly compiled code objects
# (after kernels.compile_for_amd; skipped, 77, where it was).
add_test(NAME cdna_mix.table_matches_code_objects
         COMMAND bash ${PROJECT_SOURCE_DIR}/scripts/check-cdna-mix-table.sh ${TDMSIM_AMD_KERNEL_DIR}
                 ${tdmsim_amd_targets_csv} $<TARGET_FILE:tdmsim_sim_tests>)
# After kernels.disassemble_amd too (DEPENDS orders, whatever its result): it reads the
# summaries that test made of the same objects, or makes them where there are none.
set_tests_properties(cdna_mix.table_matches_code_objects PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 600
                     FIXTURES_REQUIRED amd_code_objects DEPENDS kernels.disassemble_amd)

add_test(NAME cdna_mix.aiter_source_refused_off_cdna
         COMMAND ${CMAKE_COMMAND} -DCMD=${TDMSIM_BIN}\;run\;${CMAKE_CURRENT_SOURCE_DIR}/data/cdna-mix/aiter-on-h200.yaml
                 -DEXPECT_RC=2 "-DEXPECT_STDERR=aiter-on-h200.yaml:[0-9]+:[0-9]+: kernel.source: aiter: AITER's kernels run on CDNA3 and CDNA4"
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/cli/expect_rc.cmake)
add_test(NAME cdna_mix.scenario_tile_over_amd_lds_exit_2
         COMMAND ${CMAKE_COMMAND} -DCMD=${TDMSIM_BIN}\;run\;${CMAKE_CURRENT_SOURCE_DIR}/data/cdna-mix/tile-too-big-mi300x.yaml
                 -DEXPECT_RC=2 "-DEXPECT_STDERR=kernel moe_gate_up does not fit on a CU of machine mi300x"
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/cli/expect_rc.cmake)
add_test(NAME cdna_mix.heuristic_tiles_fit_amd_lds
         COMMAND ${CMAKE_COMMAND} -DCMD=${TDMSIM_BIN}\;run\;${CMAKE_CURRENT_SOURCE_DIR}/data/cdna-mix/auto-mi300x.yaml
                 -DEXPECT_RC=0 "-DEXPECT_STDOUT=gate_up tile 256x128x64x64 .our AMD kernel.s [0-9]+ B of LDS > 64 KiB.; down tile 256x128x64x64"
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/cli/expect_rc.cmake)

# The summary script's main-loop finder on a synthetic disassembly shaped like our
# kernels' (a rotated K loop, an out-of-order K-tail byte copy): the natural loop,
# without the kernel's entry code, less the K tail (tests/cli/amd_loop_checks.py).
add_test(NAME cdna_mix.main_loop_finder
         COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/cli/amd_loop_checks.py)

# The summary script refuses --out and --check naming one file (the check would
# compare the fresh summary with itself), before reading any object.
add_test(NAME cdna_mix.summary_out_is_check_refused
         COMMAND ${CMAKE_COMMAND} -DCMD=python3\;${PROJECT_SOURCE_DIR}/scripts/amd-kernel-summary.py\;--objects\;${CMAKE_CURRENT_BINARY_DIR}/no-objects\;--target\;gfx90a\;--out\;${CMAKE_CURRENT_BINARY_DIR}/same.csv\;--check\;${CMAKE_CURRENT_BINARY_DIR}/./same.csv
                 -DEXPECT_RC=2 "-DEXPECT_STDERR=--out and --check name the same file"
                 -DMUST_NOT_EXIST=${CMAKE_CURRENT_BINARY_DIR}/same.csv
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/cli/expect_rc.cmake)
