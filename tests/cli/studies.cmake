# ---- the studies' quoted figures (issue #21 part 7; tests/cli/studies_checks.py):
# each study in docs/studies/ quotes its key figures in a check table (id, figure,
# value, tolerance); the checker re-runs a small slice of the study's sweep (the
# same points and draws) and fails if a figure has moved beyond its tolerance, or
# if the doc and the checker disagree on which figures are quoted.
set(STUDIES_PY ${CMAKE_CURRENT_SOURCE_DIR}/cli/studies_checks.py)
set(STUDIES_WORK ${CMAKE_CURRENT_BINARY_DIR}/studies)
foreach(study speedup policy slots routing sens ep)
  add_test(NAME studies.${study} COMMAND python3 ${STUDIES_PY} ${TDMSIM_BIN} ${STUDIES_WORK}/${study} ${study})
endforeach()
