# ---- the routing stage on both paths (issue #21 part 2; tests/cli/routing_stage_checks.py):
# summary.json, the text summary and the trace show the stage `routing` on the software
# path (the router's kernels before the sort) and on the TDM path (the unit's gate GEMM and
# routing stage, no sort kernel), for Qwen3-30B-A3B (softmax) and Kimi-K2 (sigmoid with the
# selection bias); routing.router_stage: given leaves it out; a sweep of each new key
# (tdm.routing_scores_per_clock, tdm.routing_latency, routing.router_stage) changes the TDM
# path's routing time, and results.csv has routing_us.
set(ROUTING_WORK ${CMAKE_CURRENT_BINARY_DIR}/routing-stage)
set(ROUTING_PY ${CMAKE_CURRENT_SOURCE_DIR}/cli/routing_stage_checks.py)
set(ROUTING_SCENARIO ${PROJECT_SOURCE_DIR}/workloads/scenarios/qwen3-30b-a3b-decode-mi500x-tdm.yaml)
add_test(NAME routing.both_paths_summary_trace
         COMMAND python3 ${ROUTING_PY} ${TDMSIM_BIN} ${ROUTING_WORK}/both both ${ROUTING_SCENARIO})
add_test(NAME routing.both_paths_sigmoid_bias_kimi_k2
         COMMAND python3 ${ROUTING_PY} ${TDMSIM_BIN} ${ROUTING_WORK}/kimi both
                 ${PROJECT_SOURCE_DIR}/workloads/scenarios/kimi-k2-decode-skewed-mi500x-tdm.yaml)
add_test(NAME routing.router_stage_given
         COMMAND python3 ${ROUTING_PY} ${TDMSIM_BIN} ${ROUTING_WORK}/given given ${ROUTING_SCENARIO})
add_test(NAME routing.sweep_each_key_changes_tdm_routing
         COMMAND python3 ${ROUTING_PY} ${TDMSIM_BIN} ${ROUTING_WORK}/sweep sweep ${ROUTING_SCENARIO})
