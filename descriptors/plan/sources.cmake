target_sources(tdmsim_descriptors PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/moe_plan.cpp
)
