# The suite's scheduling and lanes, applied to the tests of the calling
# directory (tests/CMakeLists.txt). Kept as functions so that
# tests/cli/test_property_guards.cmake can drive them on a throwaway project:
# both refuse a configuration that would silently lose a test's cost or lane.

# tdmsim_apply_test_costs(TEST=SECONDS ...): CTest's COST of each named test.
# Without cost data of its own (a fresh build, as in CI) `ctest -j` starts
# tests in descending COST, else in the order added. An entry that is not
# TEST=SECONDS of an existing test stops the configuration.
function(tdmsim_apply_test_costs)
  foreach(entry IN LISTS ARGN)
    # (Two if()s: one if() expands ${CMAKE_MATCH_1} before its MATCHES runs.)
    set(test "")
    if(entry MATCHES "^([^=]+)=([0-9]+)$")
      set(test "${CMAKE_MATCH_1}")
      set(cost "${CMAKE_MATCH_2}")
    endif()
    if(test STREQUAL "" OR NOT TEST "${test}")
      message(FATAL_ERROR "tdmsim_test_costs: '${entry}' is not TEST=SECONDS of a test (tests/CMakeLists.txt)")
    endif()
    set_tests_properties(${test} PROPERTIES COST ${cost})
  endforeach()
endfunction()

# tdmsim_apply_label_rules(LABEL=REGEX ...): every test of this directory
# without LABELS gets the label of the first rule its name matches; one that
# matches none stops the configuration, so a new group of tests has to say
# which lane it belongs to.
function(tdmsim_apply_label_rules)
  get_property(tests DIRECTORY PROPERTY TESTS)
  foreach(test IN LISTS tests)
    get_test_property(${test} LABELS labels)
    if(labels)
      continue()
    endif()
    foreach(rule IN LISTS ARGN)
      if(NOT rule MATCHES "^([a-z]+)=(.+)$")
        message(FATAL_ERROR "tdmsim_label_rules: '${rule}' is not LABEL=REGEX, LABEL lower-case letters (tests/CMakeLists.txt)")
      endif()
      set(label "${CMAKE_MATCH_1}")
      set(pattern "${CMAKE_MATCH_2}")
      if(test MATCHES "${pattern}")
        set_tests_properties(${test} PROPERTIES LABELS ${label})
        set(labels ${label})
        break()
      endif()
    endforeach()
    if(NOT labels)
      message(FATAL_ERROR "test ${test} has no label: give it LABELS where it is added, or a rule in tdmsim_label_rules (tests/CMakeLists.txt)")
    endif()
  endforeach()
endfunction()
