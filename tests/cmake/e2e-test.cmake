# How an end-to-end script becomes a CTest test, shared by tests/CMakeLists.txt
# and the test of this rule itself (e2e/ctest/skip-rule.sh).
#
# A script skips by exiting 77 (common.inc's skip() prints "skipped: why"
# and exits 77); CTest reports that as skipped (SKIP_RETURN_CODE). A line
# that starts with "skipped:" decides nothing on its own: a test that prints
# one and then fails is reported as failed, and one that prints one and
# exits 0 is reported as failed too, since it skipped without saying so to
# CTest (the marker must come with the exit status).
set(GPUSHARE_SKIP_EXIT_CODE 77)

function(gpushare_add_e2e_test name script environment)
  add_test(NAME ${name} COMMAND bash ${script})
  set_tests_properties(${name} PROPERTIES
    SKIP_RETURN_CODE ${GPUSHARE_SKIP_EXIT_CODE}
    FAIL_REGULAR_EXPRESSION "^skipped:|\nskipped:"
    TIMEOUT 300
    ENVIRONMENT "${environment}")
endfunction()
