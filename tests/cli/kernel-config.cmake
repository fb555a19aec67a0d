# Tuned kernel tables: kernel.config / --kernel-config / kernel.heuristic
# (tests/cli/kernel_config_checks.py; hand-made tables in data/kernel_config).
set(KC_DATA ${CMAKE_CURRENT_SOURCE_DIR}/data/kernel_config)
set(KC_WORK ${CMAKE_CURRENT_BINARY_DIR}/kernel_config)
foreach(mode good sweep deepseek calibration)
  add_test(NAME kernel_config.${mode}
           COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/cli/kernel_config_checks.py ${TDMSIM_BIN} ${KC_WORK}/${mode} ${mode})
  set_tests_properties(kernel_config.${mode} PROPERTIES SKIP_RETURN_CODE 77)
endforeach()
# Bad tables and keys: exit 2 naming file, line and column (or key), no output folder.
foreach(bad "bad_number.csv:3:11:.inter_dim" "missing_column.csv:1:1:.q_type:.missing.column" "duplicate.csv:4:1:.*line.2"
            "short_row.csv:2:[0-9]+:.*15.fields" "empty.csv:1" "no-such-table.csv.*does.not.exist")
  string(REGEX REPLACE "[:.].*" "" name "${bad}")
  add_test(NAME kernel_config.bad_${name}_exit_2
           COMMAND ${CMAKE_COMMAND} -DCMD=${TDMSIM_BIN}\;run\;${KC_DATA}/tiny-fp8-no-config.yaml\;--kernel-config\;${KC_DATA}/${name}.csv\;--output\;${KC_WORK}/bad_${name}
                   -DEXPECT_RC=2 -DEXPECT_STDERR=${bad} -DMUST_NOT_EXIST=${KC_WORK}/bad_${name}
                   -P ${CMAKE_CURRENT_SOURCE_DIR}/cli/expect_rc.cmake)
endforeach()
add_test(NAME kernel_config.bad_tile_names_tile_exit_2
         COMMAND ${CMAKE_COMMAND} -DCMD=${TDMSIM_BIN}\;run\;${KC_DATA}/tiny-fp8-bad-tile.yaml\;--output\;${KC_WORK}/bad_tile
                 -DEXPECT_RC=2 -DEXPECT_STDERR=bad_tile.csv:2:108:.tile1:.*.256x16x64 -DMUST_NOT_EXIST=${KC_WORK}/bad_tile
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/cli/expect_rc.cmake)
add_test(NAME kernel_config.with_block_m_exit_2
         COMMAND ${CMAKE_COMMAND} -DCMD=${TDMSIM_BIN}\;config\;validate\;${KC_DATA}/tiny-fp8-block-m.yaml
                 -DEXPECT_RC=2 -DEXPECT_STDERR=tiny-fp8-block-m.yaml:12:[0-9]+:.kernel.block_m:.is.chosen.by.the.kernel.config
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/cli/expect_rc.cmake)
add_test(NAME kernel_config.option_with_block_m_exit_2
         COMMAND ${CMAKE_COMMAND} -DCMD=${TDMSIM_BIN}\;run\;${KC_DATA}/tiny-fp8-block-m.yaml\;--kernel-config\;${KC_DATA}/ck_names.csv\;--output\;${KC_WORK}/opt_block_m
                 -DEXPECT_RC=2 -DEXPECT_STDERR=kernel.block_m -DMUST_NOT_EXIST=${KC_WORK}/opt_block_m
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/cli/expect_rc.cmake)
add_test(NAME kernel_config.validate_missing_table_exit_2
         COMMAND ${CMAKE_COMMAND} -DCMD=${TDMSIM_BIN}\;config\;validate\;${KC_DATA}/tiny-fp8-missing-table.yaml
                 -DEXPECT_RC=2 -DEXPECT_STDERR=tiny-fp8-missing-table.yaml:[0-9]+:[0-9]+:.kernel.config:.kernel.config.table
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/cli/expect_rc.cmake)
# A row's tile that the CU cannot hold: exit 2 naming the tile, the resource and the row.
add_test(NAME kernel_config.tile_does_not_fit_exit_2
         COMMAND ${CMAKE_COMMAND} -DCMD=${TDMSIM_BIN}\;run\;${KC_DATA}/tiny-bf16-mi300x.yaml\;--kernel-config\;${KC_DATA}/too_big_tile.csv\;--output\;${KC_WORK}/too_big
                 -DEXPECT_RC=2 -DEXPECT_STDERR=moe_[a-z_]+.does.not.fit.*LDS.*kernel.config.*too_big_tile.csv:2 -DMUST_NOT_EXIST=${KC_WORK}/too_big
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/cli/expect_rc.cmake)
# --kernel-config replaces the scenario's kernel.config: the scenario's table
# need not exist then (line 3 of the option's table drives the run: the
# kernel: line names it). Likewise a sweep whose kernel.config axis replaces it.
add_test(NAME kernel_config.option_replaces_missing_table
         COMMAND ${CMAKE_COMMAND} -DCMD=${TDMSIM_BIN}\;run\;${KC_DATA}/tiny-fp8-missing-table.yaml\;--kernel-config\;${KC_DATA}/short_tiles.csv\;--output\;${KC_WORK}/replaced\;--force
                 -DEXPECT_RC=0 -DEXPECT_STDOUT=kernel.config.*short_tiles.csv:3 -DMUST_EXIST=${KC_WORK}/replaced/summary.json
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/cli/expect_rc.cmake)
add_test(NAME kernel_config.sweep_axis_replaces_missing_table
         COMMAND ${CMAKE_COMMAND} -DCMD=${TDMSIM_BIN}\;sweep\;${KC_DATA}/tiny-sweep-missing-base.yaml\;--quiet\;--force\;-j\;1\;--output\;${KC_WORK}/sweep_missing_base
                 -DEXPECT_RC=0 -DMUST_EXIST=${KC_WORK}/sweep_missing_base/results.csv
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/cli/expect_rc.cmake)
