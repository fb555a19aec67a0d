# The functional emulator (docs/emulator.md).
target_sources(tdmsim_descriptors PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/numerics.cpp
  ${CMAKE_CURRENT_LIST_DIR}/quantize.cpp
  ${CMAKE_CURRENT_LIST_DIR}/activation.cpp
  ${CMAKE_CURRENT_LIST_DIR}/synthetic.cpp
  ${CMAKE_CURRENT_LIST_DIR}/expert_weights.cpp
  ${CMAKE_CURRENT_LIST_DIR}/row_gather.cpp
  ${CMAKE_CURRENT_LIST_DIR}/gemm.cpp
  ${CMAKE_CURRENT_LIST_DIR}/plan_check.cpp
  ${CMAKE_CURRENT_LIST_DIR}/emulator.cpp
  ${CMAKE_CURRENT_LIST_DIR}/npy.cpp
)
