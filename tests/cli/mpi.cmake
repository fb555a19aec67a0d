# ---- an expert-parallel layer over MPI ranks (issue 23 part 3;
# tests/cli/ep_mpi_checks.py): `mpirun -np 2` and `-np 4` on an 8-GPU layer give
# the single-process run's outputs byte for byte, more ranks than GPUs leave
# ranks idle, errors exit 2 on every rank with the message once, and an
# expert-parallel point of an MPI sweep; docs/expert-parallel.md "Running on
# several processes / nodes". Skipped (77) without mpirun. Tiny layers (8
# tokens, software path on the H200): CI has 2 cores.
set(EP_MPI_WORK ${CMAKE_CURRENT_BINARY_DIR}/ep_mpi)
set(EP_MPI_SCENARIO ${PROJECT_SOURCE_DIR}/workloads/scenarios/qwen3-30b-decode-h200.yaml)
foreach(ranks_gpus "2;8" "4;8" "3;2")
  list(GET ranks_gpus 0 ranks)
  list(GET ranks_gpus 1 gpus)
  add_test(NAME ep.mpi_np${ranks}_gpus${gpus}
           COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/cli/ep_mpi_checks.py ${TDMSIM_BIN}
                   ${EP_MPI_WORK}/np${ranks}_gpus${gpus} ranks ${EP_MPI_SCENARIO} ${ranks} ${gpus})
  set_tests_properties(ep.mpi_np${ranks}_gpus${gpus} PROPERTIES SKIP_RETURN_CODE 77)
endforeach()
# Overlap chunked: every GPU's share and micro-batch a job, spread over 3 ranks.
add_test(NAME ep.mpi_np3_gpus4_chunked
         COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/cli/ep_mpi_checks.py ${TDMSIM_BIN}
                 ${EP_MPI_WORK}/np3_gpus4_chunked ranks ${EP_MPI_SCENARIO} 3 4 chunked)
set_tests_properties(ep.mpi_np3_gpus4_chunked PROPERTIES SKIP_RETURN_CODE 77)
foreach(mode refuse sweep)
  add_test(NAME ep.mpi_${mode}
           COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/cli/ep_mpi_checks.py ${TDMSIM_BIN} ${EP_MPI_WORK}/${mode}
                   ${mode} ${EP_MPI_SCENARIO})
  set_tests_properties(ep.mpi_${mode} PROPERTIES SKIP_RETURN_CODE 77)
endforeach()
