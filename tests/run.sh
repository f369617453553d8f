#!/usr/bin/env bash
# Runs every tests/*.bats file (or those given as arguments) and ends with the line
# "N passed, N failed, N skipped". What a suite's first lines may say:
#   # variants: glibc musl   run once per libc variant (PROFLINK_VARIANT); musl only where
#                            musl-gcc is installed. Tests that call libc_independent run in the
#                            glibc variant only, and are not counted in the others.
#                            aarch64-glibc and aarch64-musl run the programs of the aarch64
#                            build (make cross) under qemu-user, where it has been built.
#   # serial: REASON         the suite samples the CPU: it runs alone, after the others, so that
#                            their load cannot change its outcome.
#   # timed: REASON          the suite compares delivery times with its own delays but uses little
#                            CPU: such suites run two at a time, after the concurrent ones and
#                            before the serial ones (a pair of them on 2 CPUs is far from the
#                            load that could make a delivery late by their 500 ms tolerance).
# PROFLINK_TEST_VARIANTS=v1,v2 runs only those variants (make check-cross).
# Other suites run concurrently, PROFLINK_TEST_JOBS at a time (default: two per CPU: they
# mostly wait for their targets, and one per CPU kept 2 CPUs 41% busy; two per CPU took the whole
# run from 6:50 to 4:47 in back-to-back runs). Each suite's result is printed when it ends, with
# the TAP lines of any failed test.
set -u
cd "$(dirname "$0")/.." || exit 1
# `make check` runs us: programs under test must not inherit make's own settings (a nested
# make would print "Entering directory" lines and change the outputs being compared)
unset MAKELEVEL MAKEFLAGS MFLAGS MAKEOVERRIDES
files=("$@")
[ ${#files[@]} -gt 0 ] || files=(tests/*.bats)
jobs=${PROFLINK_TEST_JOBS:-$(($(nproc) * 2))}
passed=0 failed=0 skipped=0
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT

concurrent=() timed=() serial=()
for f in "${files[@]}"; do
    variants=$(head -5 "$f" | sed -n 's/^# variants: //p')
    [ -n "$variants" ] || variants=glibc
    for v in $variants; do
        if [ -n "${PROFLINK_TEST_VARIANTS:-}" ] && [[ ",$PROFLINK_TEST_VARIANTS," != *",$v,"* ]]; then
            continue
        fi
        if [ "$v" = musl ] && ! command -v musl-gcc >/dev/null; then
            echo "# $f (musl): not run, musl-gcc is not installed"
            continue
        fi
        if [[ $v == aarch64-* ]] && ! [ -x build/tests/fixtures/qemu_exec ] ||
            [[ $v == aarch64-* ]] && ! [ -e build/aarch64/elastic-jvmti-linux-proflink-aarch64.so ]; then
            echo "# $f ($v): not run, no aarch64 build (make cross: the cross toolchain and qemu-user)"
            continue
        fi
        if head -5 "$f" | grep -q '^# serial:'; then
            serial+=("$f:$v")
        elif head -5 "$f" | grep -q '^# timed:'; then
            timed+=("$f:$v")
        else
            concurrent+=("$f:$v")
        fi
    done
done

# start_suite FILE:VARIANT ID — runs the suite in the background, TAP into $logs/ID.
start_suite() {
    local f=${1%:*} v=${1##*:} id=$2
    echo "$1" >"$logs/$id.name"
    echo "# started: $f ($v)"
    (
        # the suite does not keep the run's lock (below) once the run is gone
        if [ -n "$phase_lock" ]; then exec {phase_lock}<&-; fi
        start=$(date +%s%N)
        PROFLINK_VARIANT=$v bats --tap "$f" >"$logs/$id.tap" 2>&1
        echo $(( ($(date +%s%N) - start) / 1000000 )) >"$logs/$id.ms.tmp"
        mv "$logs/$id.ms.tmp" "$logs/$id.ms"
    ) &
    echo $! >"$logs/$id.pid"
}

# report_suite ID — adds the suite's counts to the totals and prints its summary.
report_suite() {
    local id=$1 name tap ok notok skip na ms
    name=$(cat "$logs/$id.name") tap=$logs/$id.tap ms=$(cat "$logs/$id.ms" 2>/dev/null || echo 0)
    na=$(grep -cE '^ok [0-9]+ .*# skip libc-independent' "$tap")
    skip=$(( $(grep -cE '^ok [0-9]+ .*# skip' "$tap") - na ))
    ok=$(grep -cE '^ok [0-9]+' "$tap")
    notok=$(grep -cE '^not ok [0-9]+' "$tap")
    ok=$((ok - skip - na))
    # a suite that dies before reporting its plan counts as a failure, not as silence
    if ! grep -qE '^1\.\.[0-9]+' "$tap"; then notok=$((notok + 1)); fi
    passed=$((passed + ok)) failed=$((failed + notok)) skipped=$((skipped + skip))
    printf '# done: %s (%s): %d passed, %d failed, %d skipped%s, %d.%01d s\n' "${name%:*}" \
        "${name##*:}" "$ok" "$notok" "$skip" "$([ "$na" -gt 0 ] && echo ", $na libc-independent not rerun")" \
        $((ms / 1000)) $((ms % 1000 / 100))
    if [ "$notok" -gt 0 ]; then
        # each failed test with its diagnostics (the "# " lines that follow it)
        awk '/^not ok /{p=1; print; next} /^(ok |not ok )/{p=0} p && /^#/' "$tap"
        grep -qE '^1\.\.[0-9]+' "$tap" || tail -20 "$tap"
    fi
}

# run_pool N FILE:VARIANT… — at most N suites at a time, each reported as soon as it ends.
run_pool() {
    local max=$1 next=0 id
    shift
    local -a queue=("$@") running=()
    while [ $next -lt ${#queue[@]} ] || [ ${#running[@]} -gt 0 ]; do
        while [ $next -lt ${#queue[@]} ] && [ ${#running[@]} -lt "$max" ]; do
            id=s$((seq++))
            start_suite "${queue[$next]}" "$id"
            running+=("$id")
            next=$((next + 1))
        done
        wait -n 2>/dev/null || true
        local -a still=()
        for id in "${running[@]}"; do
            # the .ms file is the suite's last act: its job has ended (a zombie still answers kill -0)
            if [ ! -e "$logs/$id.ms" ]; then still+=("$id"); else
                wait "$(cat "$logs/$id.pid")" 2>/dev/null
                report_suite "$id"
            fi
        done
        running=("${still[@]}")
    done
}

# Two runs on one machine (two checkouts, CI jobs on one host): their concurrent phases may
# overlap, but the timed and serial suites of one run must not meet the other's load, or the
# delays and CPU samples they compare go wrong. A lock shared by every run on the machine: held
# shared through the concurrent phase, exclusively through the timed and serial ones (each run
# holds one at a time, so neither waits for the other forever). Without flock, or when the lock
# file cannot be opened, the run goes on alone as before, saying so.
lock_file=${TMPDIR:-/tmp}/proflink-test-phases.lock
phase_lock=
if ! command -v flock >/dev/null || ! { [ -e "$lock_file" ] || (umask 0; : >>"$lock_file"); } ||
    ! exec {phase_lock}<"$lock_file"; then
    phase_lock=
    echo "# $lock_file cannot be used: timed and serial suites may meet another run's load"
fi 2>/dev/null
# phase shared|exclusive — takes the lock in that mode (announcing a wait for another run)
phase() {
    [ -n "$phase_lock" ] || return 0
    flock -u "$phase_lock"
    if ! flock -n "--$1" "$phase_lock"; then
        echo "# waiting for another run's timed or concurrent suites (${lock_file})"
        flock "--$1" "$phase_lock"
    fi
}

seq=0
t0=$(date +%s)
phase shared
[ ${#concurrent[@]} -eq 0 ] || run_pool "$jobs" "${concurrent[@]}"
[ $((${#timed[@]} + ${#serial[@]})) -eq 0 ] || phase exclusive
[ ${#timed[@]} -eq 0 ] || run_pool 2 "${timed[@]}"
[ ${#serial[@]} -eq 0 ] || run_pool 1 "${serial[@]}"
[ -z "$phase_lock" ] || flock -u "$phase_lock"
echo "# all suites: $(($(date +%s) - t0)) s"
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
