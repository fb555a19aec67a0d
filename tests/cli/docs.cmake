# Cross-references in README.md and docs/ resolve: relative links, docs/NAME.md
# pages, and quoted section names (docs/simulator.md "Speed") that name a heading
# of their page (tests/cli/docs_links_checks.py).
add_test(NAME docs.links_resolve
         COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/cli/docs_links_checks.py ${PROJECT_SOURCE_DIR})
