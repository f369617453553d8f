#!/usr/bin/env bats
# variants: glibc musl
# OTel thread attributes (OTEP 4947) as an out-of-process reader sees them: each thread's record
# read through its TLS pointer by proflink-inspect and, independently, by tests/otel_ctx_reader.py
# (header first, then exactly attrs-data-size bytes, names from the OTEL_CTX key map).
# modules: preload/api/attr_api.c preload/context/attr_keys.c preload/context/otel_attrs.c
# modules: preload/publish/otel_payload.c
load helpers

READER=$ROOT/tests/otel_ctx_reader.py

setup() { setup_sockdir; }
teardown() {
    [ -n "${CHILD_PID:-}" ] && kill "$CHILD_PID" 2>/dev/null
    stop_target
    rm -rf "$SOCKDIR"
}

# record_addrs — the OTel record address of every thread, from the last inspect_json
record_addrs() { jget '",".join(t["otel"]["address"] for t in j["threads"] if t["otel"])'; }

# read_records PID [KEY_MAP_JSON] — the independent reader over every thread's record
read_records() {
    local extra=()
    if [ -n "${2:-}" ]; then extra=(--key-map "$2"); fi
    python3 "$READER" "$1" --records "$(record_addrs)" "${extra[@]}" >"$BATS_TEST_TMPDIR/reader.json"
    json_eval_start
}
# rget EXPR — json_get over the last read_records output, bound to `j`.
rget() { json_get "$BATS_TEST_TMPDIR/reader.json" j "$1"; }

@test "records of API-created and lazily created threads are 2-byte aligned and carry their attributes" {
    start_target "$HELPERS/api_attrs" threads 4
    wait_for_line "$BATS_TEST_TMPDIR/target.out" '^ready'
    inspect_json "$TARGET_PID"
    [ "$(jget 'len(j["threads"])')" = 9 ]
    [ "$(jget 'all(t["otel"] is not None for t in j["threads"])')" = true ]
    [ "$(jget '[t["otel"]["address"] for t in j["threads"] if int(t["otel"]["address"], 16) % 2]')" = '[]' ]
    # 4 pthread_create threads (p0..p3) and 4 thrd_create threads (t0..t3), each its own values
    [ "$(jget 'sorted(t["otel"]["attributes"].get("worker", "") for t in j["threads"])')" = \
        '["", "p0", "p1", "p2", "p3", "t0", "t1", "t2", "t3"]' ]
    [ "$(jget 'all(t["otel"]["attributes"]["http.route"] == "/r/" + t["otel"]["attributes"]["worker"][1:] for t in j["threads"] if "worker" in t["otel"]["attributes"])')" = true ]
    [ "$(jget 'all(t["otel"]["attributes"]["local_root_span_id"] == t["otel"]["span_id"] for t in j["threads"] if "worker" in t["otel"]["attributes"])')" = true ]
    read_records "$TARGET_PID"
    [ "$(rget 'sorted(r["attributes"].get("worker", "") for r in j["records"])')" = \
        '["", "p0", "p1", "p2", "p3", "t0", "t1", "t2", "t3"]' ]
    [ "$(rget 'j["attributes"]["threadlocal.attribute_key_map"][:3]')" = '["local_root_span_id", "worker", "http.route"]' ]
    [ "$(rget 'any(r["malformed"] for r in j["records"])')" = false ]
}

@test "many keys, long and unicode values: what fits is published whole, the rest refused" {
    start_target "$HELPERS/api_attrs" many 40
    wait_for_line "$BATS_TEST_TMPDIR/target.out" '^ready'
    inspect_json "$TARGET_PID"
    read_records "$TARGET_PID"
    out=$BATS_TEST_TMPDIR/target.out
    # some keys were refused for room (-3), none for another reason
    grep -q '^set k\.[0-9]* -3$' "$out"
    run ! grep -vE '^set .* (0|-3)$|^ready$' "$out"
    python3 - "$out" "$BATS_TEST_TMPDIR/reader.json" "$BATS_TEST_TMPDIR/inspect.json" <<'PY'
import json, sys
lines = [l.split() for l in open(sys.argv[1]) if l.startswith("set ")]
want = {}
for _, key, rc in lines:
    if key.startswith("k.") and rc == "0":
        i = int(key[2:]); n = (i * 5) % 40 + 1
        want[key] = "".join(chr(ord("a") + (i + j) % 26) for j in range(n))
if lines[-1][2] == "0":
    want["unicode.ключ"] = "héllo wörld ✓ 日本語 🎉"
for src in (json.load(open(sys.argv[2]))["records"],
            [t["otel"] for t in json.load(open(sys.argv[3]))["threads"]]):
    main = [r for r in src if len(r["attributes"]) > 1]
    assert len(main) == 1, main
    got = dict(main[0]["attributes"]); got.pop("local_root_span_id")
    assert got == want, (got, want)
    assert 28 + main[0]["attrs_size"] <= 640, main[0]["attrs_size"]
PY
}

@test "the 640-byte limit: values that do not fit are refused whole and counted, never cut" {
    start_target "$HELPERS/api_attrs" limit
    wait_for_line "$BATS_TEST_TMPDIR/target.out" '^ready'
    out=$BATS_TEST_TMPDIR/target.out
    [ "$(grep '^rc ' "$out" | tr '\n' ' ')" = \
        "rc big.a 0 rc big.b 0 rc big.c -3 rc uni -3 rc toolong -2 rc badutf8 -2 rc reserved -2 rc uni 0 " ]
    grep -qx 'refused 2' "$out"
    inspect_json "$TARGET_PID"
    read_records "$TARGET_PID"
    [ "$(rget '[r["attrs_size"] for r in j["records"]]')" = '[612]' ]
    [ "$(rget 'j["records"][0]["attributes"]["uni"] == "é" * 39')" = true ]
    [ "$(rget 'sorted(j["records"][0]["attributes"])')" = '["big.a", "big.b", "local_root_span_id", "uni"]' ]
}

@test "a key added while threads run: a reader with the old map and a fresh one decode every record" {
    start_target "$HELPERS/api_attrs" grow 2
    wait_for_line "$BATS_TEST_TMPDIR/target.out" '^ready'
    python3 "$READER" "$TARGET_PID" >"$BATS_TEST_TMPDIR/old.json"
    old_map=$(json_get "$BATS_TEST_TMPDIR/old.json" j 'j["attributes"]["threadlocal.attribute_key_map"]')
    [ "$old_map" = '["local_root_span_id", "a", "w"]' ]
    kill -USR1 "$TARGET_PID"
    wait_for_line "$BATS_TEST_TMPDIR/target.out" '^added 0$'
    # until the workers' next iterations set late.key too
    for _ in $(seq 100); do
        inspect_json "$TARGET_PID"
        read_records "$TARGET_PID" "$old_map"
        if [ "$(rget '[r["attributes"].get("late.key") is not None for r in j["records"]]')" = '[true, true, true]' ]; then
            break
        fi
        sleep 0.1
    done
    [ "$(rget 'j["key_map_refreshes"] >= 1')" = true ]
    [ "$(rget '[r["attributes"].get("late.key") is not None for r in j["records"]]')" = '[true, true, true]' ]
    [ "$(rget 'any(k.startswith("#") for r in j["records"] for k in r["attributes"])')" = false ]
    [ "$(rget 'j["attributes"]["threadlocal.attribute_key_map"]')" = '["local_root_span_id", "a", "w", "late.key"]' ]
    fresh=$(rget 'sorted(sorted(r["attributes"]) for r in j["records"])')
    read_records "$TARGET_PID"
    [ "$(rget 'j["key_map_refreshes"]')" = 0 ]
    [ "$(rget 'sorted(sorted(r["attributes"]) for r in j["records"])')" = "$fresh" ]
    [ "$(jget 'sorted(sorted(t["otel"]["attributes"]) for t in j["threads"])')" = "$fresh" ]
}

@test "PROFLINK_THREAD_ATTRIBUTES gives every thread of an unmodified program fixed attributes" {
    PROFLINK_THREAD_ATTRIBUTES='job.name=nightly-export,team=data%2Cinfra' \
        start_target "$HELPERS/target_threads" 3 10
    wait_for_line "$BATS_TEST_TMPDIR/target.out" '^ready' # every thread runs
    inspect_json "$TARGET_PID"
    [ "$(jget 'len(j["threads"])')" = 4 ]
    [ "$(jget '[t["otel"]["attributes"] for t in j["threads"] if t["otel"]["valid"] == 1]')" = \
        "$(python3 -c 'print(4 * [{"job.name": "nightly-export", "team": "data,infra"}])' | tr "'" '"')" ]
    [ "$(jget 'list(set(t["otel"]["trace_id"] for t in j["threads"]))')" = '["00000000000000000000000000000000"]' ]
    stop_target
    TRACEPARENT=00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01 PROFLINK_THREAD_ATTRIBUTES='job.name=nightly-export' \
        start_target "$HELPERS/target_threads" 2 10
    wait_for_line "$BATS_TEST_TMPDIR/target.out" '^ready'
    inspect_json "$TARGET_PID"
    read_records "$TARGET_PID"
    [ "$(rget 'all(r["valid"] == 1 and r["attributes"] == {"job.name": "nightly-export", "local_root_span_id": "b7ad6b7169203331"} for r in j["records"])')" = true ]
    [ "$(rget 'len(j["records"])')" = 3 ]
}

@test "a fork child keeps the key map and appends to it" {
    start_target "$HELPERS/api_attrs" many 3
    wait_for_line "$BATS_TEST_TMPDIR/target.out" '^ready'
    python3 "$READER" "$TARGET_PID" >"$BATS_TEST_TMPDIR/parent.json"
    kill -USR2 "$TARGET_PID"
    wait_for_line "$BATS_TEST_TMPDIR/target.out" '^child '
    read -r _ CHILD_PID a b < <(grep '^child ' "$BATS_TEST_TMPDIR/target.out")
    [ "$a $b" = "0 0" ]
    inspect_json "$CHILD_PID"
    read_records "$CHILD_PID"
    python3 - "$BATS_TEST_TMPDIR/parent.json" "$BATS_TEST_TMPDIR/reader.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))["attributes"]["threadlocal.attribute_key_map"]
c = json.load(open(sys.argv[2]))
m = c["attributes"]["threadlocal.attribute_key_map"]
assert m == p + ["child.only"], (p, m)
(rec,) = c["records"]
assert rec["attributes"]["k.0"] == "child" and rec["attributes"]["child.only"] == "yes", rec
assert rec["attributes"]["k.1"] == "bcdefg", rec
PY
}

@test "proflink-agent --by groups samples by an attribute's value, a key added while sampling included" {
    start_target "$HELPERS/api_attrs" threads 2
    wait_for_line "$BATS_TEST_TMPDIR/target.out" '^ready'
    "$ROOT/build/proflink-agent" -d 1 -f 20 --all-threads --by worker --json "$TARGET_PID" \
        >"$BATS_TEST_TMPDIR/agent.json"
    python3 - "$BATS_TEST_TMPDIR/agent.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
by = j["by"]
assert j["source"] == "otel" and by["attribute"] == "worker", by
assert sorted(by["groups"]) == ["p0", "p1", "t0", "t1"], by
assert all(n > 0 for n in by["groups"].values()) and by["without"] > 0, by  # main: no worker
PY
    stop_target
    # a key registered only after the agent read the map: found by re-reading it
    start_target "$HELPERS/api_attrs" grow 2
    wait_for_line "$BATS_TEST_TMPDIR/target.out" '^ready'
    "$ROOT/build/proflink-agent" -d 2 -f 20 --all-threads --by late.key --json "$TARGET_PID" \
        >"$BATS_TEST_TMPDIR/agent.json" &
    agent=$!
    sleep 0.5
    kill -USR1 "$TARGET_PID"
    wait "$agent"
    python3 - "$BATS_TEST_TMPDIR/agent.json" <<'PY'
import json, sys
by = json.load(open(sys.argv[1]))["by"]
assert by["key_map_refreshes"] >= 1 and by["groups"].get("main", 0) > 0, by
PY
}

@test "a new thread gets its creator's attributes exactly when it inherits its trace" {
    PROFLINK_INHERIT=1 start_target "$HELPERS/api_attrs" inherit
    wait_for_line "$BATS_TEST_TMPDIR/target.out" '^ready'
    inspect_json "$TARGET_PID"
    [ "$(jget '[t["otel"]["attributes"].get("req") for t in j["threads"]]')" = '["r1", "r1"]' ]
    stop_target
    PROFLINK_INHERIT=0 PROFLINK_THREAD_ATTRIBUTES=team=data start_target "$HELPERS/api_attrs" inherit
    wait_for_line "$BATS_TEST_TMPDIR/target.out" '^ready'
    inspect_json "$TARGET_PID"
    [ "$(jget '[t["otel"]["attributes"] for t in j["threads"] if t["tid"] != '"$TARGET_PID"']')" = '[{"team": "data"}]' ]
    [ "$(jget '[t["otel"]["attributes"].get("req") for t in j["threads"] if t["tid"] == '"$TARGET_PID"']')" = '["r1"]' ]
}
