# cmake -DSCHEDULING=tests/cmake/test_scheduling.cmake -DWORK=DIR [-DGENERATOR=G -DMAKE_PROGRAM=P]
#       -P test_property_guards.cmake
#
# The guards of tests/cmake/test_scheduling.cmake, on throwaway projects
# configured in WORK: a cost entry that is not TEST=SECONDS of a test, and a
# test that no label rule matches, each stop the configuration naming the
# entry or test; good entries set COST and LABELS (read back from
# `ctest --show-only=json-v1`).
cmake_minimum_required(VERSION 3.20)
foreach(v SCHEDULING WORK)
  if(NOT ${v})
    message(FATAL_ERROR "usage: cmake -DSCHEDULING=FILE -DWORK=DIR -P test_property_guards.cmake")
  endif()
endforeach()
file(REMOVE_RECURSE "${WORK}")

# configure(NAME BODY EXPECT_OK STDERR_REGEX): a project whose CMakeLists.txt is
# BODY after two tests (a.one, b.two), configured; checks the outcome.
function(configure name body expect_ok stderr_regex)
  set(dir "${WORK}/${name}")
  file(MAKE_DIRECTORY "${dir}")
  file(WRITE "${dir}/CMakeLists.txt"
       "cmake_minimum_required(VERSION 3.20)\nproject(guard_${name} LANGUAGES NONE)\nenable_testing()\n"
       "include(\"${SCHEDULING}\")\n"
       "add_test(NAME a.one COMMAND \"${CMAKE_COMMAND}\" -E true)\n"
       "add_test(NAME b.two COMMAND \"${CMAKE_COMMAND}\" -E true)\n"
       "${body}\n")
  # The calling build's generator (and its make program): the host may have no other.
  set(generator)
  if(GENERATOR)
    set(generator -G "${GENERATOR}")
  endif()
  if(MAKE_PROGRAM)
    list(APPEND generator "-DCMAKE_MAKE_PROGRAM=${MAKE_PROGRAM}")
  endif()
  execute_process(COMMAND "${CMAKE_COMMAND}" ${generator} -S "${dir}" -B "${dir}/build"
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(expect_ok AND NOT rc EQUAL 0)
    message(FATAL_ERROR "${name}: configuring failed (${rc}):\n${err}")
  endif()
  if(NOT expect_ok AND rc EQUAL 0)
    message(FATAL_ERROR "${name}: configuring succeeded; expected it to stop")
  endif()
  string(REGEX REPLACE "[ \n]+" " " err "${err}")  # CMake wraps its messages
  if(NOT err MATCHES "${stderr_regex}")
    message(FATAL_ERROR "${name}: stderr does not match '${stderr_regex}':\n${err}")
  endif()
  message(STATUS "${name}: ${rc}, as expected")
endfunction()

# property(NAME TEST PROP OUT): a test property as ctest reports it.
function(property name test prop out)
  execute_process(COMMAND "${CMAKE_CTEST_COMMAND}" --show-only=json-v1
                  WORKING_DIRECTORY "${WORK}/${name}/build" OUTPUT_VARIABLE json RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${name}: ctest --show-only failed")
  endif()
  string(JSON n LENGTH "${json}" tests)
  math(EXPR last "${n} - 1")
  foreach(i RANGE ${last})
    string(JSON tname GET "${json}" tests ${i} name)
    if(tname STREQUAL test)
      string(JSON np LENGTH "${json}" tests ${i} properties)
      math(EXPR plast "${np} - 1")
      foreach(j RANGE ${plast})
        string(JSON pname GET "${json}" tests ${i} properties ${j} name)
        if(pname STREQUAL prop)
          string(JSON value GET "${json}" tests ${i} properties ${j} value)
          set(${out} "${value}" PARENT_SCOPE)
          return()
        endif()
      endforeach()
    endif()
  endforeach()
  set(${out} "" PARENT_SCOPE)
endfunction()

configure(costs_ok "tdmsim_apply_test_costs(a.one=240 b.two=7)" TRUE "^ ?$")
property(costs_ok a.one COST cost)
if(NOT cost EQUAL 240)
  message(FATAL_ERROR "costs_ok: a.one has COST '${cost}', expected 240")
endif()
configure(costs_unknown_test "tdmsim_apply_test_costs(a.one=240 c.three=5)" FALSE
          "tdmsim_test_costs: 'c.three=5' is not TEST=SECONDS of a test")
configure(costs_not_seconds "tdmsim_apply_test_costs(a.one=fast)" FALSE
          "tdmsim_test_costs: 'a.one=fast' is not TEST=SECONDS of a test")
configure(costs_no_seconds "tdmsim_apply_test_costs(a.one)" FALSE
          "tdmsim_test_costs: 'a.one' is not TEST=SECONDS of a test")
configure(costs_two_equals "tdmsim_apply_test_costs(a.one=b=5)" FALSE
          "tdmsim_test_costs: 'a.one=b=5' is not TEST=SECONDS of a test")

configure(labels_ok "set_tests_properties(b.two PROPERTIES LABELS own)\ntdmsim_apply_label_rules(\"fast=^a\\\\.\" \"cli=^(a|b)\\\\.\")"
          TRUE "^ ?$")
property(labels_ok a.one LABELS label_a)
property(labels_ok b.two LABELS label_b)
if(NOT label_a MATCHES "^\\[ *\"fast\" *\\]$")
  message(FATAL_ERROR "labels_ok: a.one has LABELS '${label_a}', expected the first matching rule's, fast")
endif()
if(NOT label_b MATCHES "^\\[ *\"own\" *\\]$")
  message(FATAL_ERROR "labels_ok: b.two has LABELS '${label_b}', expected its own, own")
endif()
configure(labels_unmatched "tdmsim_apply_label_rules(\"fast=^a\\\\.\")" FALSE
          "test b.two has no label: give it LABELS where it is added, or a rule in tdmsim_label_rules")
# A rule's escaped dot stays a literal dot through the list: b.two's rule ^b\\.t does
# not match aXtwo's name, so aXtwo has no label.
configure(labels_literal_dot "add_test(NAME aXtwo COMMAND \"${CMAKE_COMMAND}\" -E true)\ntdmsim_apply_label_rules(\"fast=^a\\\\.\" \"cli=^b\\\\.\")"
          FALSE "test aXtwo has no label")
configure(labels_malformed "tdmsim_apply_label_rules(\"fast_2=^a\")" FALSE
          "tdmsim_label_rules: 'fast_2=\\^a' is not LABEL=REGEX")
message(STATUS "test_scheduling.cmake: every guard as expected")
