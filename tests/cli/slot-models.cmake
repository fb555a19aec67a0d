# ---- the TDM unit's slot models, dynamic policy and when its parameters bind
# (issue #21 part 3; tests/cli/slot_models_checks.py; docs/moe-timing.md "Slot models").
set(SLOTM_WORK ${CMAKE_CURRENT_BINARY_DIR}/slot-models)
set(SLOTM_PY ${CMAKE_CURRENT_SOURCE_DIR}/cli/slot_models_checks.py)
set(SLOTM_QWEN ${PROJECT_SOURCE_DIR}/workloads/scenarios/qwen3-30b-a3b-decode-mi500x-tdm.yaml)
set(SLOTM_DSV3 ${CMAKE_CURRENT_SOURCE_DIR}/data/slot-models/deepseek-v3-decode-mi500x-tdm.yaml)
# wave_synchronous written out is the default, byte for byte; every model and dynamic run.
add_test(NAME slot_models.all_models_run
         COMMAND python3 ${SLOTM_PY} ${TDMSIM_BIN} ${SLOTM_WORK}/models models ${SLOTM_QWEN})
add_test(NAME slot_models.bad_value_exit_2
         COMMAND ${CMAKE_COMMAND} -DCMD=${TDMSIM_BIN}\;config\;validate\;${CMAKE_CURRENT_SOURCE_DIR}/data/slot-models/bad-slot-model.yaml
                 -DEXPECT_RC=2 -DEXPECT_STDERR=tdm.slot_model -P ${CMAKE_CURRENT_SOURCE_DIR}/cli/expect_rc.cmake)
# The parameters that do not move the DeepSeek-V3 decode layer (one machine wave, two
# descriptors, few gathered rows), and a change of each that does.
add_test(NAME slot_models.dsv3_decode_slots_inert
         COMMAND python3 ${SLOTM_PY} ${TDMSIM_BIN} ${SLOTM_WORK}/dsv3-slots inert ${SLOTM_DSV3} slots 2 32)
add_test(NAME slot_models.slots_bind_with_several_waves
         COMMAND python3 ${SLOTM_PY} ${TDMSIM_BIN} ${SLOTM_WORK}/qwen-slots binds ${SLOTM_QWEN} slots 1 16 slot_length=50us)
add_test(NAME slot_models.dsv3_decode_queue_depth_inert_from_2
         COMMAND python3 ${SLOTM_PY} ${TDMSIM_BIN} ${SLOTM_WORK}/dsv3-qd inert ${SLOTM_DSV3} queue_depth 2 8)
add_test(NAME slot_models.queue_depth_binds_at_1
         COMMAND python3 ${SLOTM_PY} ${TDMSIM_BIN} ${SLOTM_WORK}/dsv3-qd1 binds ${SLOTM_DSV3} queue_depth 1 2)
add_test(NAME slot_models.dsv3_decode_movers_inert
         COMMAND python3 ${SLOTM_PY} ${TDMSIM_BIN} ${SLOTM_WORK}/dsv3-mv inert ${SLOTM_DSV3} movers_per_cu 2 8)
add_test(NAME slot_models.movers_bind_when_slow
         COMMAND python3 ${SLOTM_PY} ${TDMSIM_BIN} ${SLOTM_WORK}/dsv3-mv1 binds ${SLOTM_DSV3} movers_per_cu 1 4 mover_bytes_per_clock=1)
add_test(NAME slot_models.mover_bytes_bind_when_slow
         COMMAND python3 ${SLOTM_PY} ${TDMSIM_BIN} ${SLOTM_WORK}/dsv3-mb binds ${SLOTM_DSV3} mover_bytes_per_clock 1 128)
# skip_drained with slot lengths long enough that CU slots told to ask again wait past
# their unit's last workgroup and then find no job left: the CU-slot causes still
# partition each kernel's window (24us and longer failed the run's check before).
add_test(NAME slot_models.skip_drained_partition
         COMMAND python3 ${SLOTM_PY} ${TDMSIM_BIN} ${SLOTM_WORK}/sd-partition partition ${SLOTM_QWEN} 4us 16us 24us 32us 64us)
