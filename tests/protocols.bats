#!/usr/bin/env bats
# variants: glibc musl
# shellcheck shell=bash
# The publication protocols at every instruction. A profiler samples a thread wherever it is
# stopped and reads the OTel process context while the process runs; a sample inside a write
# must find the thread's records hidden or whole, and the process context's header "being
# written" (timestamp 0) or pointing at the payload of its timestamp. Sampling by signals or
# polling almost never lands in a window of a few stores, so tests/helpers/api_stepped_writes.c
# single-steps the writer with ptrace and checks after every instruction of the library as
# built (a compiler that merged or reordered the stores is caught as well), injecting a nested
# write (a signal handler's scope) at each point of the writes in the "nested" runs, and a plain
# set or clear of the handler's own at each point of a set and of a clear in the "plain" runs
# (the interrupted call must end last). The process context is also read the way its readers
# do (tests/helpers/api_stepped_ctx_readers.c): OTEP 4719 readers started at every instruction
# of the writer, their reads spread over the next ones, must accept only payloads that were
# published. And a thread's records are unpublished before their memory is freed at thread exit.
# modules: preload/context/thread_records.c preload/context/otel_attrs.c preload/api/context_api.c
# modules: preload/api/attr_api.c preload/publish/otel_process_ctx.c preload/api/resource_api.c
# modules: preload/start/tracer_resource.c
load helpers

STEPS=60000 # a run of the loop takes 10000 to 12000 instructions; each run about 3 s

setup() {
    not_emulated "no ptrace of a qemu-user guest"
    setup_sockdir
}
teardown() { rm -rf "$SOCKDIR"; }

# stepped MODE [VAR=VALUE…] — runs the stepping reader in MODE, the library preloaded (with
# OTel records unless VAR=VALUE says otherwise).
stepped() {
    local mode=$1
    shift
    run env LD_PRELOAD="$LIB" PROFLINK_OTEL_CONTEXT=1 "$@" "$HELPERS/api_stepped_writes" "$mode" "$STEPS"
    echo "$output"
    if [ "$status" -eq 77 ]; then skip "$output"; fi
    [ "$status" -eq 0 ]
    [ "${lines[1]}" = ok ]
}

# field NAME — the number after NAME in the reader's summary line
field() { sed -n "s/.* $1 \([0-9]*\).*/\1/p" <<<"${lines[0]}"; }

@test "thread records: hidden or whole at every instruction of sets, clears and attribute edits" {
    stepped records
    # every context was published, and the windows were stepped through
    [ "$(field contexts)" -eq 8 ]
    [ "$(field hidden)" -gt 1000 ]
    [ "$(field rounds)" -ge 2 ]
}

@test "thread records with fixed attributes: hidden or whole at every instruction" {
    stepped records PROFLINK_THREAD_ATTRIBUTES=job.name=stepped,team=tests
    [ "$(field contexts)" -eq 8 ]
    [ "$(field rounds)" -ge 2 ]
}

@test "thread records: a nested write at each point of a write leaves them hidden or whole" {
    stepped nested
    # the handler's own context was seen published too (contexts 9), many times interrupted
    [ "$(field contexts)" -eq 9 ]
    [ "$(field nested)" -gt 150 ]
    [ "$(field rounds)" -ge 5 ]
}

@test "thread records with fixed attributes: a nested write at each point, hidden or whole" {
    stepped nested PROFLINK_THREAD_ATTRIBUTES=job.name=stepped,team=tests
    [ "$(field contexts)" -eq 9 ]
    [ "$(field nested)" -gt 150 ]
}

@test "the apmint record alone (OTel records off, the default): hidden or whole, nested writes too" {
    stepped records PROFLINK_OTEL_CONTEXT=0
    [ "$(field contexts)" -eq 8 ]
    [ "$(field rounds)" -ge 2 ]
    stepped nested PROFLINK_OTEL_CONTEXT=0
    [ "$(field contexts)" -eq 9 ]
    [ "$(field nested)" -gt 150 ]
}

@test "a handler's plain set or clear inside a set or a clear: the interrupted call ends last" {
    stepped plain
    # a set and a clear of the handler at each point of a set and of a clear (a sweep each),
    # many of them nested in the call's write, which then published its own context
    [ "$(field set_swept)" -ge 2 ]
    [ "$(field clear_swept)" -ge 2 ]
    [ "$(field ended)" -gt 100 ]
}

@test "with fixed attributes (clears run in full): a handler's plain write, the call ends last" {
    stepped plain PROFLINK_THREAD_ATTRIBUTES=job.name=stepped,team=tests
    # the handler's set at least, at each point of a set and of a clear
    [ "$(field set_swept)" -ge 1 ]
    [ "$(field clear_swept)" -ge 1 ]
    [ "$(field ended)" -gt 100 ]
}

@test "the apmint record alone: a handler's plain set or clear, the interrupted call ends last" {
    stepped plain PROFLINK_OTEL_CONTEXT=0
    [ "$(field set_swept)" -ge 2 ]
    [ "$(field clear_swept)" -ge 2 ]
    [ "$(field ended)" -gt 100 ]
}

@test "OTel process context: each update says 'being written' until its payload is whole" {
    stepped process
    # several publications stepped through, each with its timestamp-0 window seen
    [ "$(field publications)" -ge 2 ]
    [ "$(field writing)" -ge 2 ]
}

@test "OTel process context: readers started at each instruction of updates accept only published payloads" {
    # the OTEP 4719 reader (timestamp, header, payload, timestamp again), its reads spread over
    # the writer's instructions in several shapes; an independent decoder checks each copy.
    # An update takes 20000 to 35000 instructions (musl the longer): 100000 step through two.
    run env LD_PRELOAD="$LIB" PROFLINK_OTEL_CONTEXT=1 "$HELPERS/api_stepped_ctx_readers" 100000
    echo "$output"
    if [ "$status" -eq 77 ]; then skip "$output"; fi
    [ "$status" -eq 0 ]
    [ "${lines[1]}" = ok ]
    # updates were stepped through: readers found "being written", others saw the timestamp
    # change under their copy, and at least two publications were accepted
    [ "$(field writing)" -gt 0 ]
    [ "$(field changed)" -gt 0 ]
    [ "$(field publications)" -ge 2 ]
}

@test "a thread's records are unpublished before their block is freed at thread exit" {
    run env LD_PRELOAD="$LIB" "$HELPERS/api_thread_exit" 64
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$output" = "threads 64 cleared 64 published 0 reused 0" ]
}

@test "the main thread's records, made at start-up, go the same way when it exits first" {
    run env LD_PRELOAD="$LIB" "$HELPERS/api_thread_exit" 4 main-exits
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$output" = "threads 5 cleared 5 published 0 reused 0" ]
}
