# tests/skip.sh — sourced by the shell tests: skipping in one place, as
# tests/test.h does for the C tests.
#
#   test_skip NEED FAILS MESSAGE...
#
# ends a test script whose remaining checks need what is absent: prints
# "skip: MESSAGE" and exits 77 (ctest SKIP), or exits 1 when FAILS checks
# before it failed, or when GROVE_REQUIRE_<NEED>=1 (NEED: GPU or DATA): a
# GPU or ../shared/data that is meant to be there cannot be skipped. NEED
# "-" is what no variable can require (an SDL video driver, xvfb-run).
test_skip() {
    local need=$1 fails=$2
    shift 2
    local var=GROVE_REQUIRE_$need
    if [ "$need" != - ] && [ "${!var:-}" = 1 ]; then
        echo "FAIL: $* ($var=1: this must run)"
        exit 1
    fi
    echo "skip: $*"
    [ "$fails" -eq 0 ] || exit 1
    exit 77
}
