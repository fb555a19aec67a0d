target_sources(tdmsim_descriptors PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/moe_plan.cpp
  ${CMAKE_CURRENT_LIST_DIR}/gating.cpp
  ${CMAKE_CURRENT_LIST_DIR}/routing.cpp
  ${CMAKE_CURRENT_LIST_DIR}/router_accumulate.cpp
  ${CMAKE_CURRENT_LIST_DIR}/tensor_fill.cpp
  ${CMAKE_CURRENT_LIST_DIR}/synthetic_routing.cpp
  ${CMAKE_CURRENT_LIST_DIR}/routing_trace.cpp
  ${CMAKE_CURRENT_LIST_DIR}/block_layout.cpp
  ${CMAKE_CURRENT_LIST_DIR}/kernel_heuristic.cpp
  ${CMAKE_CURRENT_LIST_DIR}/aiter_names.cpp
  ${CMAKE_CURRENT_LIST_DIR}/aiter_heuristic.cpp
  ${CMAKE_CURRENT_LIST_DIR}/kernel_config.cpp
  ${CMAKE_CURRENT_LIST_DIR}/kernel_request.cpp
  ${CMAKE_CURRENT_LIST_DIR}/tile_jobs.cpp
)
