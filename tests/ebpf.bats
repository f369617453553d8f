#!/usr/bin/env bats
# variants: glibc musl
# serial: samples the CPU of a spinning program
# The profiler's own view: an eBPF `profile` probe that, like the apmint unwinder, reads the
# thread pointer (task->thread.fsbase), adds the static TLS offset found in the ELF's TLSDESC
# relocation, follows the pointer and reads the 37-byte record on the sampled CPU. The OTel
# thread record is read the same way through otel_thread_ctx_v1, as the profiler's reader does:
# the 28-byte header first, then exactly attrs-data-size bytes.
# modules: preload/context/thread_records.c hooks/pthread_create.c
load helpers

TP_TRACE=0af7651916cd43dd8448eb211c80319c
TP_SPAN=b7ad6b7169203331

setup() {
    [ "$(uname -m)" = x86_64 ] || skip "the probe reads fsbase (x86_64)"
    command -v bpftrace >/dev/null || skip "bpftrace is not installed"
    timeout 20 bpftrace -e 'BEGIN { exit(); }' >/dev/null 2>&1 || skip "BPF is not available here"
    setup_sockdir
}
teardown() { stop_target; rm -rf "$SOCKDIR"; }

# probe_script OFF OTEL_OFF — a bpftrace program for `profile` samples of pid $1.
probe_script() {
    local off=$1 ooff=$2
    cat <<BT
profile:hz:199 /pid == \$1/ {
  \$tp = curtask->thread.fsbase;
  \$rec = *uptr((uint64 *)(\$tp $( [ "$off" -lt 0 ] && echo "- $((-off))" || echo "+ $off")));
  \$orec = *uptr((uint64 *)(\$tp $( [ "$ooff" -lt 0 ] && echo "- $((-ooff))" || echo "+ $ooff")));
  if (\$rec != 0) {
    printf("apm %d %d %d %d %lx %lx %lx\\n", tid, *uptr((uint8 *)(\$rec + 2)),
           *uptr((uint8 *)(\$rec + 3)), *uptr((uint8 *)(\$rec + 4)),
           *uptr((uint64 *)(\$rec + 5)), *uptr((uint64 *)(\$rec + 13)),
           *uptr((uint64 *)(\$rec + 29)));
  } else {
    printf("apm %d null\\n", tid);
  }
  if (\$orec != 0) {
    \$asz = *uptr((uint16 *)(\$orec + 26));
    printf("otel %d %d %lx %lx %lx %d %rx\\n", tid, *uptr((uint8 *)(\$orec + 24)),
           *uptr((uint64 *)(\$orec + 0)), *uptr((uint64 *)(\$orec + 8)), \$orec, \$asz,
           buf(uptr((uint8 *)(\$orec + 28)), \$asz));
  } else {
    printf("otel %d null\\n", tid);
  }
}
interval:s:2 { exit(); }
BT
}

# le64 HEX16 — the 8 bytes as bpftrace prints a little-endian u64 (no leading zeros)
le64() { "$PY" -c 'import sys; b=bytes.fromhex(sys.argv[1]); print("%x" % int.from_bytes(b, "little"))' "$1"; }

sample() {
    inspect_json "$TARGET_PID" --no-threads
    off=$(jget 'j["tls_offset"]')
    ooff=$(jget 'j["otel_tls_offset"]')
    probe_script "$off" "$ooff" >"$BATS_TEST_TMPDIR/probe.bt"
    timeout 60 bpftrace "$BATS_TEST_TMPDIR/probe.bt" "$TARGET_PID" >"$BATS_TEST_TMPDIR/samples" 2>/dev/null
}

# decode_otel_samples — every "otel" sample's attributes, named with the key map the independent
# reader finds in OTEL_CTX; prints one JSON object per distinct record content.
decode_otel_samples() {
    python3 "$ROOT/tests/otel_ctx_reader.py" "$TARGET_PID" >"$BATS_TEST_TMPDIR/ctx.json"
    python3 - "$BATS_TEST_TMPDIR/ctx.json" "$BATS_TEST_TMPDIR/samples" <<'PY'
import json, re, sys
keys = json.load(open(sys.argv[1]))["attributes"]["threadlocal.attribute_key_map"]
seen = set()
for line in open(sys.argv[2]):
    f = line.split()
    if not f or f[0] != "otel" or f[2] == "null":
        continue
    addr, size = int(f[5], 16), int(f[6])
    data = bytes(int(h, 16) for h in re.findall(r"\\x([0-9a-f]{2})", f[7] if len(f) > 7 else ""))
    assert addr % 2 == 0, f"record at an odd address: {line}"
    assert len(data) == size, f"read {len(data)} bytes, attrs-data-size {size}: {line}"
    attrs, pos = {}, 0
    while pos < size:
        k, n = data[pos], data[pos + 1]
        attrs[keys[k]] = data[pos + 2:pos + 2 + n].decode()
        pos += 2 + n
    assert pos == size, line
    seen.add(json.dumps({"valid": int(f[2]), "attrs": attrs}, sort_keys=True))
print("\n".join(sorted(seen)))
PY
}

@test "eBPF: every sampled thread of a CPU-bound program shows the TRACEPARENT trace" {
    TRACEPARENT="00-$TP_TRACE-$TP_SPAN-01" PROFLINK_THREAD_ATTRIBUTES=job.name=nightly-export \
        start_target "$HELPERS/target_threads" 2 20 spin
    wait_for_line "$BATS_TEST_TMPDIR/target.out" '^ready'
    sample
    hi=$(le64 "${TP_TRACE:0:16}") lo=$(le64 "${TP_TRACE:16:16}") span=$(le64 "$TP_SPAN")
    tids=$(awk '$1 == "apm" { print $2 }' "$BATS_TEST_TMPDIR/samples" | sort -u)
    [ "$(echo "$tids" | wc -w)" -ge 2 ] # both spinning workers were sampled
    # every apm sample: valid, trace present, sampled flag, the ids
    every_line "$BATS_TEST_TMPDIR/samples" '^apm' " 1 1 1 $hi $lo $span$"
    # and the OTel record agrees on every sample (then: address, attrs-data-size, attrs-data)
    every_line "$BATS_TEST_TMPDIR/samples" '^otel' " 1 $hi $lo "
    [ "$(grep -c '^otel' "$BATS_TEST_TMPDIR/samples")" -gt 10 ]
    # its attributes, read as header then exactly attrs-data-size bytes, name the same things
    [ "$(decode_otel_samples)" = \
        '{"attrs": {"job.name": "nightly-export", "local_root_span_id": "'"$TP_SPAN"'"}, "valid": 1}' ]
}

@test "eBPF: without a trace, sampled threads have a valid record with no trace present" {
    start_target "$HELPERS/target_threads" 2 20 spin
    wait_for_line "$BATS_TEST_TMPDIR/target.out" '^ready'
    sample
    [ "$(grep -c '^apm' "$BATS_TEST_TMPDIR/samples")" -gt 10 ]
    every_line "$BATS_TEST_TMPDIR/samples" '^apm' '^apm [0-9]+ 1 0 '
    # no context: the record is in place (its pointer is set once) and hidden by valid = 0
    [ "$(grep -c '^otel' "$BATS_TEST_TMPDIR/samples")" -gt 10 ]
    [ "$(decode_otel_samples)" = '{"attrs": {}, "valid": 0}' ]
}

# served_by FILE — the thread id an HTTP test server answered with
served_by() { tr -d '[:space:]' <"$1"; }

@test "eBPF: an unmodified HTTP server under concurrent traced requests (PROFLINK_HTTP=1)" {
    local port t tids=() traces=(4bf92f3577b34da6a3ce929d0e0e4736 5a3e1d7c9b8f4e2a6c0d1b3f5e7a9c11)
    port=$(free_port)
    PROFLINK_HTTP=1 start_target "$HELPERS/target_http_server" "$port"
    wait_for_line "$BATS_TEST_TMPDIR/target.out" '^listening'
    local clients=()
    for t in "${traces[@]}"; do
        curl -s -H "traceparent: 00-$t-$TP_SPAN-01" "http://127.0.0.1:$port/spin?ms=6000" \
            >"$BATS_TEST_TMPDIR/resp.$t" 3>&- &
        clients+=($!)
    done
    # both requests are being served (one thread each besides the main one)
    for _ in $(seq 100); do
        [ "$(find "/proc/$TARGET_PID/task" -mindepth 1 -maxdepth 1 | wc -l)" -ge 3 ] && break
        sleep 0.05
    done
    sample
    wait "${clients[@]}" # not a bare wait: the server is a child of this shell too
    for t in "${traces[@]}"; do tids+=("$(served_by "$BATS_TEST_TMPDIR/resp.$t")"); done
    [ "${tids[0]}" != "${tids[1]}" ]
    span=$(le64 "$TP_SPAN")
    for i in 0 1; do
        t=${traces[$i]}
        hi=$(le64 "${t:0:16}") lo=$(le64 "${t:16:16}")
        # the thread that served request i was sampled, and every sample of it carries trace i
        [ "$(grep -c "^apm ${tids[$i]} " "$BATS_TEST_TMPDIR/samples")" -gt 5 ]
        every_line "$BATS_TEST_TMPDIR/samples" "^apm ${tids[$i]} " " 1 1 1 $hi $lo $span$"
        every_line "$BATS_TEST_TMPDIR/samples" "^otel ${tids[$i]} " " 1 $hi $lo "
    done
}
