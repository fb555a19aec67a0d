# Cross-references in README.md and docs/ resolve: relative links, docs/NAME.md
# pages, and quoted section names (docs/simulator.md "Speed") that name a heading
# of their page (tests/cli/docs_links_checks.py).
add_test(NAME docs.links_resolve
         COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/cli/docs_links_checks.py ${PROJECT_SOURCE_DIR})
# The C programs of docs/api.md compile against the C API and run
# (tests/cli/api_snippets_checks.py).
add_test(NAME docs.api_snippets
         COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/cli/api_snippets_checks.py ${PROJECT_SOURCE_DIR}
                 $<TARGET_FILE:tdmsim_capi> ${CMAKE_CURRENT_BINARY_DIR}/api-snippets ${CMAKE_C_COMPILER})
# Without the gpu backend library, as the page's snippets expect.
set_tests_properties(docs.api_snippets PROPERTIES PASS_REGULAR_EXPRESSION "programs ran"
                     ENVIRONMENT TDMSIM_GPU_LIBRARY=none)
