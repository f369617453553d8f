#!/usr/bin/env bash
# Runs every tests/*.bats file (or those given as arguments) and prints the closing line
# "N passed, N failed, N skipped". A suite whose first lines say "# variants: glibc musl" runs
# once per libc variant (PROFLINK_VARIANT), the musl run only where musl-gcc is installed.
set -u
cd "$(dirname "$0")/.." || exit 1
# `make check` runs us: programs under test must not inherit make's own settings (a nested
# make would print "Entering directory" lines and change the outputs being compared)
unset MAKELEVEL MAKEFLAGS MFLAGS MAKEOVERRIDES
files=("$@")
[ ${#files[@]} -gt 0 ] || files=(tests/*.bats)
passed=0 failed=0 skipped=0
log=$(mktemp)
trap 'rm -f "$log"' EXIT

run_suite() { # file variant
    local file=$1 variant=$2
    echo "# ---- $file ($variant)"
    PROFLINK_VARIANT=$variant bats --tap "$file" 2>&1 | tee "$log"
    local ok notok skip
    skip=$(grep -cE '^ok [0-9]+ .*# skip' "$log")
    ok=$(grep -cE '^ok [0-9]+' "$log")
    notok=$(grep -cE '^not ok [0-9]+' "$log")
    passed=$((passed + ok - skip)) failed=$((failed + notok)) skipped=$((skipped + skip))
    # a suite that dies before reporting its plan counts as a failure, not as silence
    if ! grep -qE '^1\.\.[0-9]+' "$log"; then failed=$((failed + 1)); fi
}

for f in "${files[@]}"; do
    variants=$(head -5 "$f" | sed -n 's/^# variants: //p')
    [ -n "$variants" ] || variants=glibc
    for v in $variants; do
        if [ "$v" = musl ] && ! command -v musl-gcc >/dev/null; then
            echo "# $f (musl): skipped, musl-gcc is not installed"
            continue
        fi
        run_suite "$f" "$v"
    done
done
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
