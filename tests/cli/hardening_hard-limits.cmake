# Issue 19, the simulator's hard limits: runs too large for host memory, a
# kernel that does not fit on a CU, machines that would never finish, and
# microbenchmark sizes beyond the machine: all bad input (exit 2), named, and
# nothing written. (Included from tests/CMakeLists.txt.)
set(HL_EXPECT ${CMAKE_CURRENT_SOURCE_DIR}/cli/expect_rc.cmake)
set(HL_BAD ${CMAKE_CURRENT_SOURCE_DIR}/data/bad/machines)
set(HL_DATA ${CMAKE_CURRENT_SOURCE_DIR}/data/hardening/hard-limits)
set(HL_OUT ${CMAKE_CURRENT_BINARY_DIR}/hard-limits)
set(HL_SCENARIO ${PROJECT_SOURCE_DIR}/workloads/scenarios/qwen3-30b-a3b-decode-mi500x-tdm.yaml)

# The memory estimate against TDMSIM_MEMORY_LIMIT, for run and microbench.
add_test(NAME hard_limits.run_over_memory_limit_exit_2
         COMMAND ${CMAKE_COMMAND} -DCMD=${CMAKE_COMMAND}\;-E\;env\;TDMSIM_MEMORY_LIMIT=32MiB\;${TDMSIM_BIN}\;run\;${HL_SCENARIO}\;--output\;${HL_OUT}/run_memory
                 -DEXPECT_RC=2 -DEXPECT_STDERR=needs.about.*of.host.memory.*over.the.limit.of.32.MiB.*compute.dies.x.compute.cus_per_die
                 -DMUST_NOT_EXIST=${HL_OUT}/run_memory -P ${HL_EXPECT})
add_test(NAME hard_limits.microbench_chase_over_memory_limit_exit_2
         COMMAND ${CMAKE_COMMAND} -DCMD=${CMAKE_COMMAND}\;-E\;env\;TDMSIM_MEMORY_LIMIT=1GiB\;${TDMSIM_BIN}\;microbench\;chase\;--footprint\;8GiB\;--stride\;4\;--output\;${HL_OUT}/chase_memory
                 -DEXPECT_RC=2 -DEXPECT_STDERR=pointer-chase.cycle..--footprint./.--stride.=.2147483648.slots
                 -DMUST_NOT_EXIST=${HL_OUT}/chase_memory -P ${HL_EXPECT})
# The address-space limit (ulimit -v) bounds the limit too: it is reached
# before the host's memory.
add_test(NAME hard_limits.microbench_chase_over_address_space_exit_2
         COMMAND ${CMAKE_COMMAND} "-DCMD=bash;-c;ulimit -v 4000000 && exec ${TDMSIM_BIN} microbench chase --footprint 8GiB --stride 4 --output ${HL_OUT}/chase_as"
                 -DEXPECT_RC=2 "-DEXPECT_STDERR=over the limit of .* GiB .three quarters of this process's address-space limit, ulimit -v"
                 -DMUST_NOT_EXIST=${HL_OUT}/chase_as -P ${HL_EXPECT})
# emulate --max-memory raises the emulator's own limit, not the host's.
add_test(NAME hard_limits.emulate_over_host_memory_exit_2
         COMMAND ${CMAKE_COMMAND} -DCMD=${CMAKE_COMMAND}\;-E\;env\;TDMSIM_MEMORY_LIMIT=1GiB\;${TDMSIM_BIN}\;emulate\;${HL_DATA}/emulate_big.yaml\;--max-memory\;100\;--output\;${HL_OUT}/emulate_big
                 -DEXPECT_RC=2 "-DEXPECT_STDERR=emulate_big.yaml: emulating 400000 tokens of olmoe-1b-7b needs about .* GiB, more than this host allows, 1 GiB .TDMSIM_MEMORY_LIMIT."
                 -DMUST_NOT_EXIST=${HL_OUT}/emulate_big -P ${HL_EXPECT})
add_test(NAME hard_limits.bad_memory_limit_env_exit_2
         COMMAND ${CMAKE_COMMAND} -DCMD=${CMAKE_COMMAND}\;-E\;env\;TDMSIM_MEMORY_LIMIT=lots\;${TDMSIM_BIN}\;microbench\;copy\;--bytes\;1MiB
                 -DEXPECT_RC=2 -DEXPECT_STDERR=TDMSIM_MEMORY_LIMIT=.lots.:.expected.a.size -P ${HL_EXPECT})
add_test(NAME hard_limits.microbench_bytes_over_capacity_exit_2
         COMMAND ${CMAKE_COMMAND} -DCMD=${TDMSIM_BIN}\;microbench\;copy\;--bytes\;1PiB\;--output\;${HL_OUT}/copy_capacity
                 -DEXPECT_RC=2 -DEXPECT_STDERR=--bytes.*exceed.machine.mi300x.s.memory.hbm.capacity
                 -DMUST_NOT_EXIST=${HL_OUT}/copy_capacity -P ${HL_EXPECT})

# A kernel that does not fit on a CU (was SystemC E549, exit 1).
add_test(NAME hard_limits.run_tile_does_not_fit_exit_2
         COMMAND ${CMAKE_COMMAND} -DCMD=${TDMSIM_BIN}\;run\;${HL_DATA}/tile_does_not_fit.yaml\;--output\;${HL_OUT}/tile
                 -DEXPECT_RC=2 -DEXPECT_STDERR=kernel.moe_down.does.not.fit.on.a.CU.of.machine.mi300x:.it.needs.128KiB.of.LDS.per.workgroup,.compute.lds_per_cu.is.64KiB;.its.tile.is.256x64x256x512..kernel.down_tile
                 -DMUST_NOT_EXIST=${HL_OUT}/tile -P ${HL_EXPECT})

# The heuristic's tile does not fit a machine's CU: named at the machine
# file's key of the resource that ran out.
add_test(NAME hard_limits.run_machine_lds_too_small_exit_2
         COMMAND ${CMAKE_COMMAND} -DCMD=${TDMSIM_BIN}\;run\;${PROJECT_SOURCE_DIR}/workloads/scenarios/mixtral-8x7b-64tok-bf16-mi300x.yaml\;--machine\;${HL_DATA}/small_lds.yaml\;--output\;${HL_OUT}/small_lds
                 -DEXPECT_RC=2 -DEXPECT_STDERR=small_lds.yaml:7:15:.compute.lds_per_cu:.kernel.moe_gate_up.does.not.fit.on.a.CU.of.machine.small-lds
                 -DMUST_NOT_EXIST=${HL_OUT}/small_lds -P ${HL_EXPECT})
# More experts than the sort kernel's LDS counts: refused before the routing
# is built (it took over a minute and 4 GB), at the scenario's model key.
add_test(NAME hard_limits.run_experts_beyond_sort_lds_exit_2
         COMMAND ${CMAKE_COMMAND} -DCMD=${TDMSIM_BIN}\;run\;${HL_DATA}/many_experts_run.yaml\;--output\;${HL_OUT}/many_experts
                 -DEXPECT_RC=2 "-DEXPECT_STDERR=many_experts_run.yaml:5:8: model: the software path's sort kernel counts rows per expert in LDS.*65536 experts a GPU .ep 1. need 256KiB.*compute.lds_per_cu of machine mi300x is 64KiB"
                 -DMUST_NOT_EXIST=${HL_OUT}/many_experts -P ${HL_EXPECT})
set_tests_properties(hard_limits.run_experts_beyond_sort_lds_exit_2 PROPERTIES TIMEOUT 20)

# Machines the schema once accepted that crashed or never finished: `run`
# refuses them up front.
foreach(case refresh_time_not_below_interval too_many_cus total_cus_above_max mall_slice_too_small)
  add_test(NAME hard_limits.run_machine_${case}_exit_2
           COMMAND ${CMAKE_COMMAND} -DCMD=${TDMSIM_BIN}\;run\;${HL_SCENARIO}\;--machine\;${HL_BAD}/${case}.yaml\;--output\;${HL_OUT}/${case}
                   -DEXPECT_RC=2 -DEXPECT_STDERR=${case}.yaml:[0-9]+:[0-9]+:.(compute|memory)
                   -DMUST_NOT_EXIST=${HL_OUT}/${case} -P ${HL_EXPECT})
  set_tests_properties(hard_limits.run_machine_${case}_exit_2 PROPERTIES TIMEOUT 60)
endforeach()

# Many HBM channels: the stats snapshot stays linear in the stats.
add_test(NAME hard_limits.run_many_hbm_channels_finishes
         COMMAND ${CMAKE_COMMAND} -DCMD=${TDMSIM_BIN}\;run\;${PROJECT_SOURCE_DIR}/workloads/scenarios/qwen3-30b-decode-h200.yaml\;--machine\;${HL_DATA}/many_hbm_channels.yaml\;-q
                 -DEXPECT_RC=0 -P ${HL_EXPECT})
set_tests_properties(hard_limits.run_many_hbm_channels_finishes PROPERTIES TIMEOUT 60)
