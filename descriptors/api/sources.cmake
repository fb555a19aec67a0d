# The MoE descriptor API (docs/emulator.md, "Descriptor API").
target_sources(tdmsim_descriptors PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/context.cpp
  ${CMAKE_CURRENT_LIST_DIR}/moe_api.cpp
  ${CMAKE_CURRENT_LIST_DIR}/router.cpp
)
