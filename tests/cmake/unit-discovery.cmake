# Checks that CTest runs every Catch2 test case exactly once, under its own
# name. catch_discover_tests turns each line of --list-test-names-only into
# a CTest test; a name that CMake splits (a ';') or that Catch2 reads as a
# pattern would register tests that match nothing, and so run nothing.
# Run as: cmake -D UNIT_TESTS=exe -D BUILD_DIR=dir -D CTEST=ctest -P this
foreach(var UNIT_TESTS BUILD_DIR CTEST)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "unit-discovery: ${var} is not set")
  endif()
endforeach()

execute_process(COMMAND ${UNIT_TESTS} --list-test-names-only
                OUTPUT_VARIABLE listed RESULT_VARIABLE listed_status)
# Catch2 v2 exits with the number of tests listed; only a crash is negative
# or non-numeric.
if(NOT listed_status MATCHES "^[0-9]+$")
  message(FATAL_ERROR "unit-discovery: ${UNIT_TESTS} --list-test-names-only: ${listed_status}")
endif()
# Count the lines by their newlines: a CMake list would split a name at
# ';' here too, and hide the fault this checks for.
string(REGEX REPLACE "\n+" "\n" listed "${listed}")
string(REGEX REPLACE "^\n" "" listed "${listed}")
string(REGEX REPLACE "[^\n]" "" newlines "${listed}")
string(LENGTH "${newlines}" catch_count)

execute_process(COMMAND ${CTEST} --test-dir ${BUILD_DIR} --show-only=json-v1
                OUTPUT_VARIABLE json RESULT_VARIABLE json_status)
if(NOT json_status EQUAL 0)
  message(FATAL_ERROR "unit-discovery: ctest --show-only failed: ${json_status}")
endif()
string(JSON ctest_total LENGTH "${json}" tests)
set(ctest_count 0)
set(ctest_names "")
if(ctest_total GREATER 0)
  math(EXPR last "${ctest_total} - 1")
  foreach(i RANGE ${last})
    string(JSON name GET "${json}" tests ${i} name)
    if(name MATCHES "^unit/")
      math(EXPR ctest_count "${ctest_count} + 1")
      string(APPEND ctest_names "${name}\n")
    endif()
  endforeach()
endif()

if(NOT catch_count EQUAL ctest_count)
  message(FATAL_ERROR "unit-discovery: Catch2 lists ${catch_count} test cases but CTest "
                      "registers ${ctest_count} unit/ tests; a name CTest splits or cannot "
                      "pass back to Catch2 (';' in a name) runs nothing.\nCTest's:\n${ctest_names}")
endif()
message(STATUS "unit-discovery: ${catch_count} Catch2 test cases, ${ctest_count} CTest tests")
