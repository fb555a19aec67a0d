# MoE and tensor descriptor formats (docs/descriptor-format.md). The first
# group has no dependency beyond the enums header and is what the libFuzzer
# target compiles (tests/fuzz/run_fuzz.sh); keep it that way.
target_sources(tdmsim_descriptors PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/descriptor_error.cpp
  ${CMAKE_CURRENT_LIST_DIR}/crc32.cpp
  ${CMAKE_CURRENT_LIST_DIR}/tensor_descriptor.cpp
  ${CMAKE_CURRENT_LIST_DIR}/tensor_mover.cpp
  ${CMAKE_CURRENT_LIST_DIR}/row_gather.cpp
  ${CMAKE_CURRENT_LIST_DIR}/tensor_file.cpp
  ${CMAKE_CURRENT_LIST_DIR}/moe_layout.cpp
  ${CMAKE_CURRENT_LIST_DIR}/moe_validate.cpp
  ${CMAKE_CURRENT_LIST_DIR}/moe_codec.cpp
  ${CMAKE_CURRENT_LIST_DIR}/moe_stream.cpp
  # plan-, fmt- and JSON-dependent parts
  ${CMAKE_CURRENT_LIST_DIR}/moe_builder.cpp
  ${CMAKE_CURRENT_LIST_DIR}/moe_stream_check.cpp
  ${CMAKE_CURRENT_LIST_DIR}/token_gather.cpp
  ${CMAKE_CURRENT_LIST_DIR}/descriptor_file.cpp
  ${CMAKE_CURRENT_LIST_DIR}/descriptor_dump.cpp
  ${CMAKE_CURRENT_LIST_DIR}/example_descriptors.cpp
)
