#!/usr/bin/env bats
# variants: glibc musl aarch64-glibc aarch64-musl
# PROFLINK_FIFO: every message and every delivered transaction as a JSON line in a named pipe
# (docs/formats.md), and a program that never notices what the pipe's reader does.
# modules: preload/messages/fifo.c preload/messages/json_lines.c preload/leaves/json.c
# modules: preload/leaves/base64url.c preload/delivery/deliverer.c
load message_helpers

setup() {
    setup_sockdir
    FIFO=$BATS_TEST_TMPDIR/records.fifo
    READ=$BATS_TEST_TMPDIR/read.jsonl
    READER_PID=
}
teardown() {
    msg_teardown
    [ -n "$READER_PID" ] && kill "$READER_PID" 2>/dev/null
    [ -z "${FOREIGN:-}" ] || userdel "$FOREIGN" 2>/dev/null
    return 0
}

# start_reader [lines N | slow FILE] — a consumer appending what it reads to $READ (slow: only
# once FILE exists, so the pipe stays full until the test says). It has the pipe open (so
# proflink can open its end) before this returns.
start_reader() {
    rm -f "$BATS_TEST_TMPDIR/reader.ready"
    "$PY" - "$FIFO" "$READ" "${1:-all}" "${2:-0}" "$BATS_TEST_TMPDIR/reader.ready" 8>&- <<'PY' &
import os, select, sys, time
path, out, mode, arg, ready = sys.argv[1:6]
fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # a reader now: writers can open
open(ready, "w").close()
with open(out, "ab", buffering=0) as o:
    if mode == "slow":
        deadline = time.monotonic() + 120
        while not os.path.exists(arg) and time.monotonic() < deadline:
            time.sleep(0.05)
    n = 0
    while not (mode == "lines" and n >= int(arg)):
        select.select([fd], [], [], 0.05)
        try:
            chunk = os.read(fd, 65536)
        except BlockingIOError:
            continue
        if not chunk:  # no writer (yet, or any more)
            time.sleep(0.02)
            continue
        o.write(chunk)
        n += chunk.count(b"\n")
os.close(fd)
PY
    READER_PID=$!
    local i
    for i in $(seq 100); do
        [ -e "$BATS_TEST_TMPDIR/reader.ready" ] && return 0
        sleep 0.05
    done
    return 1
}

read_lines() { [ -f "$READ" ] && wc -l <"$READ" || echo 0; }

wait_read() { # N [TENTHS]
    local i
    for i in $(seq "${2:-100}"); do
        [ "$(read_lines)" -ge "$1" ] && return 0
        sleep 0.1
    done
    echo "read $(read_lines) records, expected $1" >&2
    return 1
}

@test "registration, correlation and transaction records round-trip, host id escaped" {
    mkfifo -m 600 "$FIFO"
    start_reader
    t0=$(date +%s%N)
    start_msg_target ELASTIC_OTEL_UNIVERSAL_PROFILING_INTEGRATION_ENABLED=true PROFLINK_FIFO="$FIFO" \
        OTEL_SERVICE_NAME='fifo "svc" é'
    send reg-hex 60 225c0a01ffc3a97f # " \ newline U+0001 (invalid byte) é DEL
    send reg 1500                      # minor 1: no host id
    send corr "$TRACE" "$TXN" "$ID_A" 513
    wait_stat correlations 1
    cmd end "$TRACE" "$TXN" 1 sampled   # held, then written by the reader thread
    X2=2222222222222222
    cmd end "$TRACE" "$X2" 0 unsampled  # written by the application thread, at once
    wait_read 5 40
    "$PY" - "$READ" "$TARGET_PID" "$TRACE" "$TXN" "$B64_A" "$t0" "$(date +%s%N)" <<'PY'
import json, sys
path, pid, trace, txn, a, t0, t1 = sys.argv[1:]
recs = [json.loads(l) for l in open(path, "rb").read().decode("utf-8").splitlines()]
# every record: Unix time in ns when it was written, and the service name
for r in recs:
    assert list(r)[:4] == ["type", "pid", "ts_ns", "service"], r
    assert int(t0) <= r.pop("ts_ns") <= int(t1), (t0, r, t1)
    assert r.pop("service") == 'fifo "svc" \u00e9', r
by = lambda t: [r for r in recs if r["type"] == t]
reg = by("registration")
assert reg[0] == {"type": "registration", "pid": int(pid), "samples_delay_ms": 60,
                  "host_id": '"\\\n\x01\ufffd\u00e9\x7f'}, reg[0]
assert reg[1] == {"type": "registration", "pid": int(pid), "samples_delay_ms": 1500,
                  "host_id": ""}, reg[1]
assert by("correlation") == [{"type": "correlation", "pid": int(pid), "trace_id": trace,
                              "transaction_id": txn, "stack_trace_id": a, "count": 513}], recs
tx = {r["transaction_id"]: r for r in by("transaction")}
assert tx[txn] == {"type": "transaction", "pid": int(pid), "trace_id": trace,
                   "transaction_id": txn, "stack_trace_ids": {a: 513}}, tx
assert tx["2222222222222222"]["stack_trace_ids"] == {}, tx
assert list(recs[0]) == ["type", "pid", "samples_delay_ms", "host_id"]  # ts_ns, service popped
PY
    stats
    [ "$(stat_val fifo_records)" -eq 5 ] && [ "$(stat_val fifo_drops)" -eq 0 ]
}

@test "the FIFO is created 0600 if missing; with no reader records are dropped and counted" {
    start_msg_target PROFLINK_FIFO="$FIFO"
    [ -p "$FIFO" ]
    [ "$(stat -c %a "$FIFO")" = 600 ]
    send corr "$TRACE" "$TXN" "$ID_A" 1 20
    cmd end "$TRACE" "$TXN" 0 t1
    wait_stat correlations 20
    wait_stat fifo_drops 21
    [ "$(stat_val fifo_records)" -eq 0 ]
    grep -qE '^txn t1 ' "$OUT"
    stop_msg_target
    [ "$TARGET_STATUS" -eq 0 ]
}

@test "a slow reader: what does not fit in the pipe is dropped and counted, the rest intact" {
    mkfifo -m 600 "$FIFO"
    start_reader slow "$BATS_TEST_TMPDIR/reader.go"
    start_msg_target PROFLINK_FIFO="$FIFO"
    cmd cb-count
    send corr-ids "$TRACE" "$TXN" 6000
    wait_stat correlations 6000
    # delivery follows receiving (the socket is drained first): wait until all are delivered
    wait_stat callbacks 6000
    for _ in $(seq 100); do
        [ "$(( $(stat_val fifo_records) + $(stat_val fifo_drops) ))" -ge 6000 ] && break
        sleep 0.1
        stats
    done
    [ "$(stat_val fifo_drops)" -gt 0 ]
    [ "$(( $(stat_val fifo_records) + $(stat_val fifo_drops) ))" -eq 6000 ]
    [ "$(stat_val callbacks)" -eq 6000 ] # the program's own delivery is not affected
    records=$(stat_val fifo_records)
    touch "$BATS_TEST_TMPDIR/reader.go" # the reader wakes up: what the pipe held comes out whole
    wait_read "$records" 100
    "$PY" - "$READ" <<'PY'
import json, sys
for raw in open(sys.argv[1], "rb"):
    assert len(raw) <= 4096
    assert json.loads(raw)["type"] == "correlation"
PY
    [ "$(read_lines)" -eq "$records" ]
}

@test "a reader that goes away midway: no SIGPIPE in any thread, records resume with a new one" {
    mkfifo -m 600 "$FIFO"
    start_reader lines 3
    start_msg_target PROFLINK_FIFO="$FIFO"
    for i in 1 2 3; do send corr "$TRACE" "$TXN" "$ID_A" "$i"; done
    wait_read 3
    wait "$READER_PID" || true
    READER_PID=
    # the first writes after the close come from an application thread (immediate
    # transactions), then from the reader thread (messages): both get EPIPE
    cmd end "$TRACE" "$TXN" 0 after-close-1
    cmd end "$TRACE" "$TXN" 0 after-close-2
    send corr "$TRACE" "$TXN" "$ID_B" 1 10
    wait_stat correlations 13
    [ "$(stat_val fifo_drops)" -ge 12 ]
    grep -qE '^txn after-close-2 ' "$OUT"
    kill -0 "$TARGET_PID"
    # a new reader: records flow again (the pipe is reopened at most once a second)
    : >"$READ"
    start_reader lines 2
    sleep 1.2
    send corr "$TRACE" "$TXN" "$ID_A" 42
    cmd end "$TRACE" "$TXN" 0 reopened
    wait_read 2 40
    grep -q '"count":42' "$READ"
    grep -q '"type":"transaction"' "$READ"
    # it goes away too; this time the reader thread is the first to write
    wait "$READER_PID" || true
    READER_PID=
    stats
    drops=$(stat_val fifo_drops)
    send corr "$TRACE" "$TXN" "$ID_A" 43
    wait_stat fifo_drops $((drops + 1))
    rtid=$(reader_tid "$TARGET_PID")
    itid=$(reader_tid "$TARGET_PID" proflink-intake)
    for tid in "$rtid" "$itid"; do
        grep -qx 'SigPnd:[[:space:]]*0000000000000000' /proc/"$TARGET_PID"/task/"$tid"/status
    done
    grep -qx 'ShdPnd:[[:space:]]*0000000000000000' /proc/"$TARGET_PID"/status
    stop_msg_target
    [ "$TARGET_STATUS" -eq 0 ] # not 141: SIGPIPE never reached the program
}

@test "a transaction with more ids than fit one record is split into records that add up" {
    mkfifo -m 600 "$FIFO"
    start_reader
    start_msg_target ELASTIC_OTEL_UNIVERSAL_PROFILING_INTEGRATION_ENABLED=true PROFLINK_FIFO="$FIFO"
    send corr-ids "$TRACE" "$TXN" 300
    wait_stat correlations 300
    cmd end "$TRACE" "$TXN" 1 wide
    wait_lines '^txn wide ' 1 40
    grep -qE '^txn wide .* n=300 ' "$OUT"
    wait_read 303 40
    "$PY" - "$READ" "$TXN" <<'PY'
import json, sys
ids, parts = {}, 0
for raw in open(sys.argv[1], "rb"):
    assert len(raw) <= 4096, len(raw)
    r = json.loads(raw)
    if r["type"] == "transaction":
        assert r["transaction_id"] == sys.argv[2]
        parts += 1
        for k, v in r["stack_trace_ids"].items():
            assert k not in ids
            ids[k] = v
assert parts >= 2 and len(ids) == 300 and set(ids.values()) == {1}, (parts, len(ids))
PY
}

@test "PROFLINK_FIFO naming a regular file: refused with a warning, the file untouched" {
    echo keep >"$BATS_TEST_TMPDIR/plain"
    start_msg_target PROFLINK_FIFO="$BATS_TEST_TMPDIR/plain"
    send corr "$TRACE" "$TXN" "$ID_A" 1
    cmd end "$TRACE" "$TXN" 0 t
    wait_stat fifo_drops 2
    [ "$(cat "$BATS_TEST_TMPDIR/plain")" = keep ]
    grep -q 'not a named pipe' "$ERR"
}

# foreign_user — a user of our own for this test (removed by teardown)
foreign_user() {
    command -v useradd >/dev/null || skip "useradd is not installed"
    [ "$(id -u)" = 0 ] || skip "needs root to add a user"
    FOREIGN=$(unique_user hd)
    useradd --no-create-home --shell /usr/sbin/nologin "$FOREIGN"
}

# refused_fifo WHY-REGEX — the target writes nothing into $FIFO, read by a consumer that is
# there all along, and says why once
refused_fifo() {
    start_reader
    start_msg_target PROFLINK_FIFO="$FIFO"
    send corr "$TRACE" "$TXN" "$ID_A" 1
    cmd end "$TRACE" "$TXN" 0 t
    wait_stat fifo_drops 2
    sleep 0.3 # the records were dropped, not late: nothing arrives afterwards either
    [ "$(read_lines)" -eq 0 ]
    [ "$(stat_val fifo_records)" -eq 0 ]
    [ "$(grep -c 'proflink:' "$ERR")" -eq 1 ]
    grep -qE "PROFLINK_FIFO .*($1)" "$ERR"
}

@test "a FIFO another user created (mode 0666): refused with one warning, nothing written" {
    foreign_user
    mkfifo -m 666 "$FIFO"
    chown "$FOREIGN" "$FIFO"
    chmod 666 "$FIFO"
    refused_fifo 'owned by another user'
}

@test "a FIFO of ours writable by group or others, or reached through a symlink: refused" {
    mkfifo -m 600 "$BATS_TEST_TMPDIR/real.fifo"
    ln -s "$BATS_TEST_TMPDIR/real.fifo" "$FIFO"
    refused_fifo 'symbolic link'
    stop_msg_target
    rm -f "$FIFO" "$READ"
    # shellcheck disable=SC2031 # set by start_reader, in this shell
    kill "$READER_PID" 2>/dev/null || true
    mkfifo -m 600 "$FIFO"
    chmod 620 "$FIFO"
    refused_fifo 'writable by group or others'
}

@test "a first wait made inside a signal handler that interrupted malloc: the threads start later, outside it" {
    # The start allocates and creates threads: on top of the malloc a handler interrupted, glibc
    # aborted ("malloc assertion failure in sysmalloc") in 8 of 10 runs of this program.
    local i out pid
    for i in $(seq 10); do
        out=$BATS_TEST_TMPDIR/run$i.out
        rm -f "$FIFO"
        mkfifo "$BATS_TEST_TMPDIR/stdin$i"
        PROFLINK_FIFO=$FIFO LD_PRELOAD=$LIB ${EMULATOR:+"$EMULATOR"} \
            "$HELPERS/target_signal_first_wait" 300 <"$BATS_TEST_TMPDIR/stdin$i" >"$out" 2>&1 &
        pid=$!
        exec 9>"$BATS_TEST_TMPDIR/stdin$i" # its stdin: it waits until this closes
        wait_for_line "$out" '^main polled|Fatal|rror' 20
        cat "$out"
        grep -qE '^handler polls [1-9]' "$out"
        grep -qx 'main polled' "$out"
        # the handler's polls came first; the start waited for the main loop's polls (the
        # threads name themselves once they run)
        for _ in $(seq 100); do
            [ "$(cat /proc/"$pid"/task/*/comm | grep -cxE 'proflink-(reader|intake)')" = 2 ] && break
            sleep 0.05
        done
        grep -qx proflink-reader /proc/"$pid"/task/*/comm
        grep -qx proflink-intake /proc/"$pid"/task/*/comm
        exec 9>&-
        wait "$pid"
        refute grep -q 'proflink:' "$out"
    done
}
