#!/usr/bin/env bats
# The profiler's 128 process slots on a host with proflink in many processes:
# `proflink-inspect --all` warns past the limit and names the executables holding the slots.
load helpers
bats_require_minimum_version 1.5.0

setup() { setup_sockdir; PIDS=(); }
teardown() { stop_pids "${PIDS[@]}"; rm -rf "$SOCKDIR"; }

@test "inspect --all past 128 processes names what takes the slots, most first, with the fix" {
    libc_independent
    local tail_exe sleep_exe
    sleep_exe=$(readlink -f "$(command -v sleep)")
    tail_exe=$(readlink -f "$(command -v tail)")
    # 125 sleepers and 6 tails: 131 attachable processes, bounded and killed by the teardown
    for _ in $(seq 125); do
        LD_PRELOAD=$LIB sleep 60 3>&- &
        PIDS+=("$!")
    done
    for _ in $(seq 6); do
        LD_PRELOAD=$LIB tail -f /dev/null 3>&- &
        PIDS+=("$!")
    done
    for _ in $(seq 200); do
        [ "$(find "$SOCKDIR" -name 'proflink-*.sock' | wc -l)" -ge 131 ] && break
        sleep 0.05
    done
    run "$INSPECT" --all
    [ "$status" -eq 1 ]
    line=$(grep "take the profiler's 128 slots" <<<"$output")
    echo "$line"
    [[ $line =~ slots\ first\ come,\ first\ served:\ ([0-9]+)\ $sleep_exe, ]]
    [ "${BASH_REMATCH[1]}" -ge 125 ]
    [[ $line =~ ,\ ([0-9]+)\ $tail_exe(,|$) ]]
    [ "${BASH_REMATCH[1]}" -ge 6 ]
    grep -A1 "take the profiler's 128 slots" <<<"$output" | grep -q '^fix: select the services only: PROFLINK_INCLUDE in /etc/proflink/proflink.conf'
}

@test "inspect --all within the slots names no executables" {
    libc_independent
    LD_PRELOAD=$LIB sleep 60 3>&- &
    PIDS+=("$!")
    wait_attachable "$!"
    run "$INSPECT" --all
    echo "$output"
    [[ "$output" == *"the profiler has 128 process slots"* ]]
    # (other suites' processes may map proflink too; the host is far from 128 then)
    if [ "$(grep -c ' attachable$' <<<"$output")" -le 128 ]; then
        refute grep -q "take the profiler's 128 slots" <<<"$output"
    fi
}
