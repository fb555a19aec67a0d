target_sources(tdmsim_descriptors PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/moe_plan.cpp
  ${CMAKE_CURRENT_LIST_DIR}/gating.cpp
  ${CMAKE_CURRENT_LIST_DIR}/routing.cpp
  ${CMAKE_CURRENT_LIST_DIR}/router_accumulate.cpp
  ${CMAKE_CURRENT_LIST_DIR}/tensor_fill.cpp
  ${CMAKE_CURRENT_LIST_DIR}/synthetic_routing.cpp
  ${CMAKE_CURRENT_LIST_DIR}/routing_trace.cpp
  ${CMAKE_CURRENT_LIST_DIR}/capacity.cpp
  ${CMAKE_CURRENT_LIST_DIR}/block_layout.cpp
  ${CMAKE_CURRENT_LIST_DIR}/expert_parallel.cpp
  ${CMAKE_CURRENT_LIST_DIR}/kernel_heuristic.cpp
  ${CMAKE_CURRENT_LIST_DIR}/aiter_names.cpp
  ${CMAKE_CURRENT_LIST_DIR}/aiter_heuristic.cpp
  ${CMAKE_CURRENT_LIST_DIR}/aiter_kernels.cpp
  ${CMAKE_CURRENT_LIST_DIR}/kernel_config.cpp
  ${CMAKE_CURRENT_LIST_DIR}/kernel_request.cpp
  ${CMAKE_CURRENT_LIST_DIR}/tile_jobs.cpp
)
# Our AMD kernels' compiled facts (amd_kernels.h: main-loop instruction mix,
# static LDS), generated from the committed disassembly summaries: the numbers
# are the code objects', never typed by hand.
find_package(Python3 REQUIRED COMPONENTS Interpreter)
set(tdmsim_amd_table ${CMAKE_CURRENT_BINARY_DIR}/generated/amd_kernels_table.inc)
add_custom_command(
  OUTPUT ${tdmsim_amd_table}
  COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_CURRENT_BINARY_DIR}/generated
  COMMAND Python3::Interpreter ${PROJECT_SOURCE_DIR}/scripts/gen-cdna-loop-mix.py --out ${tdmsim_amd_table}
          gfx90a=${PROJECT_SOURCE_DIR}/validation/data/amd/kernels-gfx90a.csv
          gfx940=${PROJECT_SOURCE_DIR}/validation/data/amd/kernels-gfx940.csv
  DEPENDS ${PROJECT_SOURCE_DIR}/validation/data/amd/kernels-gfx90a.csv
          ${PROJECT_SOURCE_DIR}/validation/data/amd/kernels-gfx940.csv
          ${PROJECT_SOURCE_DIR}/scripts/gen-cdna-loop-mix.py
  COMMENT "Generating our AMD kernels' table from validation/data/amd"
  VERBATIM)
target_sources(tdmsim_descriptors PRIVATE ${CMAKE_CURRENT_LIST_DIR}/amd_kernels.cpp ${tdmsim_amd_table})
target_include_directories(tdmsim_descriptors PRIVATE ${CMAKE_CURRENT_BINARY_DIR}/generated)
