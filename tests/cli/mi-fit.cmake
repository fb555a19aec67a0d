# The MI355X / MI300X accuracy figures of docs/validation.md against the simulator: a few
# decode-sized rows of the published AITER tables simulated again (tests/cli/mi_fit_checks.py);
# skipped where ../shared/calibration is absent. Then AITER's format names through
# `tdmsim config aiter-format` (formats_from_aiter), the mapping validation/calibration/
# aiter_mi300x.py and aiter_mi355x.py use.
add_test(NAME mi_fit.aiter_format_maps_names
         COMMAND ${CMAKE_COMMAND} -DCMD=${TDMSIM_BIN}\;config\;aiter-format\;torch.float8_e4m3fn\;torch.float8_e4m3fn\;QuantType.per_1x32
                 -DEXPECT_RC=0 "-DEXPECT_STDOUT=dtype: fp8_e4m3.weight_dtype: fp8_e4m3.quant: per_1x32.label: MXFP8"
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/cli/expect_rc.cmake)
add_test(NAME mi_fit.aiter_format_refused_pair_exit_2
         COMMAND ${CMAKE_COMMAND} -DCMD=${TDMSIM_BIN}\;config\;aiter-format\;torch.bfloat16\;torch.float8_e4m3fn\;QuantType.per_Token
                 -DEXPECT_RC=2 "-DEXPECT_STDERR=AITER quantisation .torch.bfloat16, torch.float8_e4m3fn, QuantType.per_Token.: dtype bf16 pairs with"
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/cli/expect_rc.cmake)
add_test(NAME mi_fit.aiter_format_bad_name_exit_2
         COMMAND ${CMAKE_COMMAND} -DCMD=${TDMSIM_BIN}\;config\;aiter-format\;torch.float64\;torch.float64\;QuantType.No
                 -DEXPECT_RC=2 "-DEXPECT_STDERR=q_dtype_a 'torch.float64' is not a dtype AITER's MoE uses"
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/cli/expect_rc.cmake)
# A tuned table's tile names through `tdmsim config aiter-tile` (plan::read_aiter_tile, the
# reading --kernel-config takes), which validation/calibration/aiter_tuned.py asks.
add_test(NAME mi_fit.aiter_tile_reads_assembly_stage1_name
         COMMAND ${CMAKE_COMMAND} -DCMD=${TDMSIM_BIN}\;config\;aiter-tile\;--format\;torch.float8_e4m3fnuz\;torch.float8_e4m3fnuz\;QuantType.per_Token\;--block-m\;64\;--\;_ZN5aiter48fmoe_stage1_bf16_pertokenFp8_g1u1_64x128_2tg_pf3E
                 -DEXPECT_RC=0 "-DEXPECT_STDOUT=tile: 256x64x128x128.lds_buffers: 0.assembly_stage1: 1.workgroups_per_cu: 2.combine: machine.reading: AITER assembly stage-1 kernel .tile_m x tile_n, 2 workgroups a CU."
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/cli/expect_rc.cmake)
add_test(NAME mi_fit.aiter_tile_ck_name_pipeline
         COMMAND ${CMAKE_COMMAND} -DCMD=${TDMSIM_BIN}\;config\;aiter-tile\;--block-m\;32\;--stage\;2\;moe_ck2stages_gemm2_256x32x64x64_1x4_TypeCastExpertWeight_v1_Nswizzle0_Quant0
                 -DEXPECT_RC=0 "-DEXPECT_STDOUT=tile: 256x32x64x64.lds_buffers: 1.assembly_stage1: 0.workgroups_per_cu: 0.combine: machine.reading: CK kernel name"
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/cli/expect_rc.cmake)
add_test(NAME mi_fit.aiter_tile_m_mismatch_exit_2
         COMMAND ${CMAKE_COMMAND} -DCMD=${TDMSIM_BIN}\;config\;aiter-tile\;--block-m\;64\;256x32x64x128
                 -DEXPECT_RC=2 "-DEXPECT_STDERR=tile '256x32x64x128' .256x32x64x128.: its M differs from the row's block_m 64"
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/cli/expect_rc.cmake)
add_test(NAME mi_fit.validation_rows_match_docs
         COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/cli/mi_fit_checks.py ${TDMSIM_BIN})
set_tests_properties(mi_fit.validation_rows_match_docs PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 120)
# validation/calibration/combine_overlap.py (whether the down kernel's combine overlaps its
# matrix work, read from the published stage-2 times): both readings recovered from made-up
# rows, bad input exit 2, and the committed validation/data/amd/combine-overlap.md
# reproduced (skipped where ../shared/calibration is absent).
foreach(mode synthetic bad data)
  add_test(NAME mi_fit.combine_overlap_${mode}
           COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/cli/combine_overlap_checks.py ${mode})
  set_tests_properties(mi_fit.combine_overlap_${mode} PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 120)
endforeach()
