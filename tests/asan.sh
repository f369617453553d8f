#!/usr/bin/env bash
# tests/asan.sh LIB — runs the suites whose programs take their preload list from
# PROFLINK_TEST_PRELOAD (tests/message_helpers.bash) against LIB, an ASan+UBSan build, with the
# ASan runtime preloaded first (it must be the first object loaded). Any sanitizer report, from
# the library or from a sanitized helper, fails the run, even when the test itself passed.
# Only the glibc variant: the sanitizer runtimes are glibc programs' libraries.
set -u
cd "$(dirname "$0")/.." || exit 1
lib=$(realpath "$1")
runtime=$(gcc -print-file-name=libasan.so)
[ -f "$runtime" ] || { echo "asan: no ASan runtime ($runtime)" >&2; exit 1; }
suites=(tests/messages.bats tests/deferral.bats tests/fifo.bats tests/pull.bats tests/api_odd_programs.bats
        tests/closed_stdio.bats)

logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
export PROFLINK_TEST_PRELOAD="$runtime $lib" PROFLINK_VARIANT=glibc
# Leak checking is off: proflink keeps per-thread records and its queues for the life of the
# process on purpose, and the test programs are killed at the end of many tests.
export ASAN_OPTIONS="detect_leaks=0:log_path=$logs/asan:log_exe_name=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:log_path=$logs/ubsan:log_exe_name=1"
unset MAKELEVEL MAKEFLAGS MFLAGS MAKEOVERRIDES

failed=0 passed=0
for f in "${suites[@]}"; do
    echo "# ---- $f (asan)"
    out=$(bats --tap "$f" 2>&1)
    echo "$out"
    passed=$((passed + $(grep -cE '^ok ' <<<"$out")))
    failed=$((failed + $(grep -cE '^not ok ' <<<"$out")))
    grep -qE '^1\.\.[0-9]+' <<<"$out" || failed=$((failed + 1))
done
reports=$(find "$logs" -type f | wc -l)
if [ "$reports" -gt 0 ]; then
    echo "# sanitizer reports:"
    cat "$logs"/*
fi
echo "asan: $passed passed, $failed failed, $reports sanitizer report(s)"
[ "$failed" -eq 0 ] && [ "$reports" -eq 0 ]
