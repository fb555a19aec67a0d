# AITER's kernels on the MI-series (docs/moe-timing.md "AITER's 1-stage kernels and
# the combine"; validation/calibration/aiter_mi355x.py): the MI355X report script on a
# made-up fixture, and the 1-stage layer's tile in `tdmsim run`'s kernel line (named as
# AITER does, N = subGU_n: docs/moe-plan.md "Tuned kernel tables").
add_test(NAME aiter_model.mi355x_report_fixture
         COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/cli/aiter_model_checks.py ${TDMSIM_BIN} report)
add_test(NAME aiter_model.mi355x_report_bad_format_exit_2
         COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/cli/aiter_model_checks.py ${TDMSIM_BIN} bad)
add_test(NAME aiter_model.run_one_stage_tile_mi355x
         COMMAND ${CMAKE_COMMAND} -DCMD=${TDMSIM_BIN}\;run\;${CMAKE_CURRENT_SOURCE_DIR}/data/aiter/one-stage-dsv3-tp8-mi355x.yaml
                 -DEXPECT_RC=0 "-DEXPECT_STDOUT=tiles 256x32x256x128 for the 1-stage kernel \\(AITER's assembly kernels\\)"
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/cli/expect_rc.cmake)
add_test(NAME aiter_model.run_one_stage_tile_h200_unchanged
         COMMAND ${CMAKE_COMMAND} -DCMD=${TDMSIM_BIN}\;run\;${CMAKE_CURRENT_SOURCE_DIR}/data/aiter/one-stage-h200.yaml
                 -DEXPECT_RC=0 "-DREJECT_STDOUT=AITER's assembly" -P ${CMAKE_CURRENT_SOURCE_DIR}/cli/expect_rc.cmake)
# The scenario's CK pipelines (kernel.*_lds_buffers): not used where the heuristic picks
# AITER's 1-stage assembly kernel (the kernel: line says so), and named as the way out
# when two LDS buffers do not fit (docs/moe-plan.md "Tuned kernel tables").
add_test(NAME aiter_model.lds_buffers_one_stage_not_used
         COMMAND ${CMAKE_COMMAND} -DCMD=${TDMSIM_BIN}\;run\;${CMAKE_CURRENT_SOURCE_DIR}/data/aiter/lds-buffers-one-stage-mi300x.yaml
                 -DEXPECT_RC=0 "-DEXPECT_STDOUT=1-stage \\(8 local rows.*kernel.\\*_lds_buffers not used: AITER's 1-stage kernel"
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/cli/expect_rc.cmake)
add_test(NAME aiter_model.lds_buffers_too_large_exit_2
         COMMAND ${CMAKE_COMMAND} -DCMD=${TDMSIM_BIN}\;run\;${CMAKE_CURRENT_SOURCE_DIR}/data/aiter/lds-buffers-too-large-mi300x.yaml
                 -DEXPECT_RC=2 "-DEXPECT_STDERR=kernel moe_down does not fit.*LDS.*set kernel.down_lds_buffers 1"
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/cli/expect_rc.cmake)
# A tuned row of block_m 80 (AITER's older tuners timed 16..160 in steps of 16, with
# assembly stage-1 kernels of those M) runs AITER's kernels; the project's kernels, built
# for powers of two, refuse it at the row's block_m column (docs/moe-plan.md).
add_test(NAME aiter_model.block_m_80_table_row
         COMMAND ${CMAKE_COMMAND} -DCMD=${TDMSIM_BIN}\;run\;${CMAKE_CURRENT_SOURCE_DIR}/data/aiter/asm-stage1-block-m-80-mixtral-tp8-mi300x.yaml
                 -DEXPECT_RC=0 "-DEXPECT_STDOUT=block_m 80 .*tiles 256x80x128x128 / 256x80x128x128.*gate/up: 2 workgroups a CU"
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/cli/expect_rc.cmake)
add_test(NAME aiter_model.block_m_80_our_kernels_exit_2
         COMMAND ${CMAKE_COMMAND} -DCMD=${TDMSIM_BIN}\;run\;${CMAKE_CURRENT_SOURCE_DIR}/data/aiter/block-m-80-our-kernels-mixtral-tp8-mi300x.yaml\;--output\;${CMAKE_CURRENT_BINARY_DIR}/bm80-out
                 -DEXPECT_RC=2 "-DEXPECT_STDERR=asm-stage1-block-m-80-mixtral-tp8-mi300x.csv:2:126: block_m: column block_m: 80 runs AITER's kernels only"
                 -DMUST_NOT_EXIST=${CMAKE_CURRENT_BINARY_DIR}/bm80-out -P ${CMAKE_CURRENT_SOURCE_DIR}/cli/expect_rc.cmake)
# kernel.block_m 48 with AITER's kernels: plans, simulates, and emulates (its descriptors
# encoded and decoded: the format takes multiples of 16).
add_test(NAME aiter_model.block_m_48_scenario_runs
         COMMAND ${CMAKE_COMMAND} -DCMD=${TDMSIM_BIN}\;run\;${CMAKE_CURRENT_SOURCE_DIR}/data/aiter/block-m-48-qwen3-mi300x.yaml
                 -DEXPECT_RC=0 "-DEXPECT_STDOUT=block_m 48 \\(scenario\\); tiles 256x48x"
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/cli/expect_rc.cmake)
add_test(NAME aiter_model.block_m_48_scenario_emulates
         COMMAND ${CMAKE_COMMAND} -DCMD=${TDMSIM_BIN}\;emulate\;${CMAKE_CURRENT_SOURCE_DIR}/data/aiter/block-m-48-qwen3-mi300x.yaml\;--output\;${CMAKE_CURRENT_BINARY_DIR}/bm48-emulate\;--force\;--quiet
                 -DEXPECT_RC=0 -DMUST_EXIST=${CMAKE_CURRENT_BINARY_DIR}/bm48-emulate/y.npy
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/cli/expect_rc.cmake)
# A tuned row naming FlyDSL kernels (flydsl_moe1_..._t64x256x256, flydsl_moe2_..._reduce) runs
# their tiles and, for the reduce mode, the down stage's plain stores then the sum and copy
# kernels (docs/moe-plan.md "Tuned kernel tables"); `config aiter-tile` says the same.
add_test(NAME aiter_model.flydsl_reduce_table_row
         COMMAND ${CMAKE_COMMAND} -DCMD=${TDMSIM_BIN}\;run\;${CMAKE_CURRENT_SOURCE_DIR}/data/aiter/flydsl-reduce-dsv3-tp8-mi355x.yaml
                 -DEXPECT_RC=0 "-DEXPECT_STDOUT=tiles 256x64x256x256 / 256x64x256x256.*down combine: reduce.*combine +moe_topk_sum.*combine +moe_out_copy"
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/cli/expect_rc.cmake)
add_test(NAME aiter_model.flydsl_aiter_tile
         COMMAND ${CMAKE_COMMAND} -DCMD=${TDMSIM_BIN}\;config\;aiter-tile\;--block-m\;32\;--stage\;2\;--\;flydsl_moe2_abf16_wint4_bf16_t32x128x128_reduce_bnt2
                 -DEXPECT_RC=0 "-DEXPECT_STDOUT=tile: 256x32x128x128.*combine: reduce"
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/cli/expect_rc.cmake)
# kernel.gate_up_workgroups_per_cu above what the CU's wave slots hold (10 of 256 threads on
# MI300X) would change nothing: refused at the key, exit 2, nothing written (docs/moe-plan.md).
add_test(NAME aiter_model.workgroups_per_cu_above_wave_slots_exit_2
         COMMAND ${CMAKE_COMMAND} -DCMD=${TDMSIM_BIN}\;run\;${CMAKE_CURRENT_SOURCE_DIR}/data/aiter/workgroups-per-cu-12-mi300x.yaml\;--output\;${CMAKE_CURRENT_BINARY_DIR}/wg12-out
                 -DEXPECT_RC=2 "-DEXPECT_STDERR=workgroups-per-cu-12-mi300x.yaml:10:30: kernel.gate_up_workgroups_per_cu: 12 workgroups a CU, but a CU of machine mi300x holds at most 10 of 256 threads"
                 -DMUST_NOT_EXIST=${CMAKE_CURRENT_BINARY_DIR}/wg12-out -P ${CMAKE_CURRENT_SOURCE_DIR}/cli/expect_rc.cmake)
# A tile whose CK register estimate no CU holds (about 3100 registers a thread against the 512
# a wave can address) is refused, not run at a capped register count.
add_test(NAME aiter_model.tile_beyond_registers_exit_2
         COMMAND ${CMAKE_COMMAND} -DCMD=${TDMSIM_BIN}\;run\;${CMAKE_CURRENT_SOURCE_DIR}/data/aiter/gate-up-tile-beyond-registers-mi300x.yaml\;--output\;${CMAKE_CURRENT_BINARY_DIR}/regs-out
                 -DEXPECT_RC=2 "-DEXPECT_STDERR=kernel moe_gate_up does not fit on a CU of machine mi300x: it needs [0-9]+KiB of vector registers.*kernel.gate_up_tile"
                 -DMUST_NOT_EXIST=${CMAKE_CURRENT_BINARY_DIR}/regs-out -P ${CMAKE_CURRENT_SOURCE_DIR}/cli/expect_rc.cmake)
# Any AITER tuned table predicted (validation/calibration/aiter_tuned.py), on made-up
# fixtures: AITER's own column layout with rows that cannot be simulated (each kept, with
# why), the same stage times as aiter_mi355x.py, --machine, malformed input (exit 2), and
# every AITER format on both machines simulated, none faster than the roofline, a tdmsim
# that fails on a row (listed, exit 1), and the stage times `tdmsim run --kernel-config`
# gives a row of CK v1 names and one of an assembly stage-1 kernel (its _3tg), --plots
# (a figure per machine), and the orderings physics demands of any fit (`order`: monotone
# in tokens, fp8 faster than bf16 and fp4 than fp8, MI355X than MI300X), and every CK
# instance AITER builds for gfx942 and gfx950 simulated on MI300X and MI355X (`instances`), and
# a row of FlyDSL names run as --kernel-config runs it, its stage-2 mode included (`flydsl`).
foreach(mode rows same machine bad edges grid crash config plots order instances flydsl)
  add_test(NAME aiter_model.tuned_table_${mode}
           COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/cli/aiter_tuned_checks.py ${TDMSIM_BIN} ${mode})
  set_tests_properties(aiter_model.tuned_table_${mode} PROPERTIES TIMEOUT 300)
endforeach()
# --block-m takes what a table's block_m column takes (a multiple of 16 in
# 16..256), so no answer is for a row no table can hold.
add_test(NAME aiter_model.aiter_tile_block_m_as_tables
         COMMAND ${CMAKE_COMMAND} -DCMD=${TDMSIM_BIN}\;config\;aiter-tile\;--block-m\;17\;256x17x64x64
                 -DEXPECT_RC=2 "-DEXPECT_STDERR=--block-m: must be a multiple of 16 in 16..256"
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/cli/expect_rc.cmake)
