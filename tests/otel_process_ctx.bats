#!/usr/bin/env bats
# variants: glibc musl
# The OpenTelemetry process context (OTEP 4719, docs/formats.md): an OTEL_CTX mapping read from
# outside by tests/otel_ctx_reader.py, an independent reader with its own protobuf decoder, and
# cross-checked with protoc. "module:" tests drive the publisher directly (otel_ctx_driver, built
# here for the variant's libc); "library:" tests preload the real library.
# modules: preload/publish/otel_process_ctx.c preload/publish/otel_payload.c
# modules: preload/publish/protobuf_writer.c preload/config/resource_attrs.c
# modules: preload/leaves/random.c preload/leaves/utf8.c

load helpers

setup_file() {
    # The wire schema of ProcessContext and the OTLP messages it uses (field numbers and types
    # only), for protoc's typed decoding; one package is enough for the wire format.
    cat >"$BATS_FILE_TMPDIR/process_context.proto" <<'EOF'
syntax = "proto3";
package pctx;
message AnyValue {
  oneof value {
    string string_value = 1;
    bool bool_value = 2;
    int64 int_value = 3;
    double double_value = 4;
    ArrayValue array_value = 5;
    KeyValueList kvlist_value = 6;
    bytes bytes_value = 7;
  }
}
message ArrayValue { repeated AnyValue values = 1; }
message KeyValueList { repeated KeyValue values = 1; }
message KeyValue { string key = 1; AnyValue value = 2; }
message Resource { repeated KeyValue attributes = 1; uint32 dropped_attributes_count = 2; }
message ProcessContext { Resource resource = 1; repeated KeyValue attributes = 2; }
EOF
}

setup() {
    READER="$PY $BATS_TEST_DIRNAME/otel_ctx_reader.py"
    DRIVER=$HELPERS/otel_ctx_driver              # built by make, for this variant's C library
    SECCOMP=$ROOT/build/tests/fail_syscall
    PIDS=()
    setup_sockdir
    # the environment of the test runner must not leak into what is published
    unset OTEL_SERVICE_NAME OTEL_RESOURCE_ATTRIBUTES ELASTIC_APM_SERVICE_NAME ELASTIC_APM_ENVIRONMENT
    unset ELASTIC_APM_SERVICE_VERSION PROFLINK_OTEL_CONTEXT PROFLINK_LOG
    export ASAN_OPTIONS=detect_leaks=0
}

teardown() {
    local p
    for p in "${PIDS[@]}"; do
        kill "$p" 2>/dev/null || true
        wait "$p" 2>/dev/null || true
    done
    rm -rf "$SOCKDIR"
}

# bg NAME CMD... — runs CMD in the background, stdout/stderr to $BATS_TEST_TMPDIR/NAME.out/.err;
# waits until its first stdout line (the helpers print "ready PID RC" / "parent PID RC").
bg() {
    local name=$1
    shift
    "$@" >"$BATS_TEST_TMPDIR/$name.out" 2>"$BATS_TEST_TMPDIR/$name.err" &
    PIDS+=($!)
    BG_PID=$!
    for _ in $(seq 200); do
        [ -s "$BATS_TEST_TMPDIR/$name.out" ] && return 0
        kill -0 "$BG_PID" 2>/dev/null || break
        sleep 0.025
    done
    echo "$name never started:" >&2
    cat "$BATS_TEST_TMPDIR/$name.out" "$BATS_TEST_TMPDIR/$name.err" >&2
    return 1
}

# bg_preloaded NAME CMD... — the same under the library, waiting until the context is readable
# (the target programs print nothing we could wait for).
bg_preloaded() {
    local name=$1
    shift
    LD_PRELOAD=$LIB "$@" >"$BATS_TEST_TMPDIR/$name.out" 2>"$BATS_TEST_TMPDIR/$name.err" &
    PIDS+=($!)
    BG_PID=$!
    for _ in $(seq 200); do
        grep -q OTEL_CTX "/proc/$BG_PID/maps" 2>/dev/null && return 0
        kill -0 "$BG_PID" 2>/dev/null || break
        sleep 0.025
    done
    return 0 # tests that expect no context check for themselves
}

# read_ctx PID [reader options] — the reader's JSON in $BATS_TEST_TMPDIR/ctx.json; fails if the
# reader finds no valid context.
read_ctx() {
    $READER "$@" >"$BATS_TEST_TMPDIR/ctx.json" || {
        cat "$BATS_TEST_TMPDIR/ctx.json" >&2
        return 1
    }
}

# cget EXPR — evaluates EXPR with `c` bound to the last read_ctx JSON.
cget() { json_get "$BATS_TEST_TMPDIR/ctx.json" c "$1"; }

# check_identity [INSTANCE_ID] — the attributes every context of ours carries (the instance id
# is a random UUID unless OTEL_RESOURCE_ATTRIBUTES gave INSTANCE_ID).
check_identity() {
    $PY - "$BATS_TEST_TMPDIR/ctx.json" "${1:-}" <<'EOF'
import json, re, sys
c = json.load(open(sys.argv[1]))
given = sys.argv[2]
r, a = c["resource"], c["attributes"]
assert c["version"] == 2 and c["published_at_ns"] > 0, c
assert 0 < c["payload_size"] <= 65536, c["payload_size"]
assert c["duplicate_keys"] == [], c["duplicate_keys"]
assert r["telemetry.sdk.name"] == "proflink" and r["telemetry.sdk.version"] == "0.1.0", r
assert r["telemetry.sdk.language"] == "cpp", r
assert (r["service.instance.id"] == given if given else
        re.fullmatch(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}",
                     r["service.instance.id"])), r["service.instance.id"]
assert a == {"threadlocal.schema_version": "tlsdesc_v1_dev",
             "threadlocal.attribute_key_map": ["local_root_span_id"]}, a
EOF
}

need_lib() {
    [ -f "$LIB" ] || skip "library not built ($LIB)"
    [ -x "$HELPERS/target_threads" ] || skip "test helpers not built ($HELPERS)"
}

# ---- the publisher module ------------------------------------------------------------------

@test "module: publishes the header, identity and thread-context schema" {
    OTEL_SERVICE_NAME=checkout OTEL_RESOURCE_ATTRIBUTES='deployment.environment.name=prod,service.version=1.2.3,service.namespace=shop' \
        bg drv "$DRIVER" publish 10
    read -r _ pid rc <"$BATS_TEST_TMPDIR/drv.out"
    [ "$rc" = 0 ]
    read_ctx "$pid"
    check_identity
    [ "$(cget 'c["mappings_found"]')" = 1 ]
    [ "$(cget 'c["resource"]["service.name"]')" = checkout ]
    [ "$(cget 'c["resource"]["deployment.environment.name"]')" = prod ]
    [ "$(cget 'c["resource"]["service.version"]')" = 1.2.3 ]
    [ "$(cget 'c["resource"]["service.namespace"]')" = shop ]
    [ "$(cget 'len(c["resource"])')" = 8 ]
}

@test "module: the mapping is one private, non-executable page with the header at its start" {
    bg drv "$DRIVER" publish 10
    read -r _ pid _ <"$BATS_TEST_TMPDIR/drv.out"
    read_ctx "$pid"
    [ "$(cget 'c["mapping_name"]')" = "/memfd:OTEL_CTX (deleted)" ] ||
        [ "$(cget 'c["mapping_name"]')" = "[anon_shmem:OTEL_CTX]" ]
    [ "$(cget 'c["perms"]')" = rw-p ]
    line=$(grep -F OTEL_CTX "/proc/$pid/maps")
    range=${line%% *}
    [ $((0x${range#*-} - 0x${range%-*})) -eq "$(getconf PAGESIZE)" ]
    [ "0x${range%-*}" = "$(cget 'c["address"]')" ]
    # the payload lives outside the header page
    [ "$(cget 'int(c["payload_ptr"]) != int(c["address"], 16)')" = true ]
    # the memfd was closed once mapped: the program never sees an extra descriptor
    ls -l "/proc/$pid/fd" >"$BATS_TEST_TMPDIR/fds"
    refute grep -q memfd "$BATS_TEST_TMPDIR/fds"
    # default service name: unknown_service:<executable>
    [ "$(cget 'c["resource"]["service.name"]')" = "unknown_service:otel_ctx_driver" ]
    [ "$(cget '"service.version" in c["resource"]')" = false ]
}

@test "module: protoc decodes the payload with the ProcessContext schema" {
    OTEL_SERVICE_NAME=svc OTEL_RESOURCE_ATTRIBUTES='a=%C3%A9t%C3%A9' bg drv "$DRIVER" publish 10
    read -r _ pid _ <"$BATS_TEST_TMPDIR/drv.out"
    read_ctx "$pid" --raw-out "$BATS_TEST_TMPDIR/payload.bin"
    protoc --decode_raw <"$BATS_TEST_TMPDIR/payload.bin" >"$BATS_TEST_TMPDIR/raw.txt"
    grep -q '"tlsdesc_v1_dev"' "$BATS_TEST_TMPDIR/raw.txt"
    protoc -I"$BATS_FILE_TMPDIR" --decode=pctx.ProcessContext process_context.proto \
        <"$BATS_TEST_TMPDIR/payload.bin" >"$BATS_TEST_TMPDIR/typed.txt" 2>"$BATS_TEST_TMPDIR/typed.err"
    refute [ -s "$BATS_TEST_TMPDIR/typed.err" ]
    grep -q 'key: "service.name"' "$BATS_TEST_TMPDIR/typed.txt"
    grep -q 'string_value: "svc"' "$BATS_TEST_TMPDIR/typed.txt"
    grep -q 'key: "threadlocal.attribute_key_map"' "$BATS_TEST_TMPDIR/typed.txt"
    grep -q 'string_value: "local_root_span_id"' "$BATS_TEST_TMPDIR/typed.txt"
    # protoc prints non-ASCII as octal escapes: é = \303\251
    grep -qF 'string_value: "\303\251t\303\251"' "$BATS_TEST_TMPDIR/typed.txt"
}

# Builds an unusual OTEL_RESOURCE_ATTRIBUTES into $BATS_TEST_TMPDIR/attrs.txt and the attributes
# we expect into expected.json, decoding it independently of proflink (Python's own percent
# decoding); duplicates: the last wins; owned keys are proflink's.
make_unusual_attrs() {
    $PY - "$BATS_TEST_TMPDIR" <<'EOF'
import json, sys, urllib.parse
d = sys.argv[1]
members = [
    "utf8.value=%C3%A9t%C3%A9%20%E6%97%A5%E6%9C%AC%20%F0%9F%9A%80",
    "raw.utf8=naïve-日本",
    "with%3Dequals%2Cand%2Ccommas=v%3D1%2Cv%3D2",
    "percent=100%25",
    "  spaced.key  =  spaced value  ",
    "empty.value=",
    "dup=first",
    "big.value=" + "x" * 4096,
    "malformed-no-equals",
    "service.name=ignored-because-OTEL_SERVICE_NAME-wins",
    "service.instance.id=not-ours",
    "telemetry.sdk.name=not-ours",
    "deployment.environment=legacy-key-kept",
]
members += [f"attr.{i:03d}=value-{i}-" + "y" * (i % 50) for i in range(300)]
members += ["dup=last"]
text = ",".join(members)
expected = {}
for m in text.split(","):
    if "=" not in m:
        continue
    k, v = m.split("=", 1)
    k = urllib.parse.unquote_to_bytes(k.strip()).decode()
    v = urllib.parse.unquote_to_bytes(v.strip()).decode()
    if k in ("service.name", "service.instance.id", "telemetry.sdk.name"):
        continue
    expected[k] = v
open(f"{d}/attrs.txt", "w").write(text)
json.dump(expected, open(f"{d}/expected.json", "w"), ensure_ascii=False)
EOF
}

@test "module: every OTEL_RESOURCE_ATTRIBUTES member is published, percent-decoded" {
    libc_independent
    make_unusual_attrs
    OTEL_SERVICE_NAME=svc OTEL_RESOURCE_ATTRIBUTES=$(cat "$BATS_TEST_TMPDIR/attrs.txt") \
        bg drv "$DRIVER" publish 10
    read -r _ pid rc <"$BATS_TEST_TMPDIR/drv.out"
    [ "$rc" = 0 ]
    read_ctx "$pid"
    check_identity not-ours # OTEL_RESOURCE_ATTRIBUTES may set the instance id (issue 9)
    [ "$(cget 'c["resource"]["service.name"]')" = svc ]
    $PY - "$BATS_TEST_TMPDIR" <<'EOF'
import json, sys
d = sys.argv[1]
got = json.load(open(f"{d}/ctx.json"))["resource"]
want = json.load(open(f"{d}/expected.json"))
for k, v in want.items():
    assert got.get(k) == v, (k, v[:80], str(got.get(k))[:80])
extra = set(got) - set(want) - {"service.name", "service.instance.id", "telemetry.sdk.name",
                                "telemetry.sdk.version", "telemetry.sdk.language",
                                "deployment.environment.name"}
assert not extra, extra
# the legacy key is passed through, and config.c takes the environment name from it
assert got["deployment.environment.name"] == "legacy-key-kept"
assert got["dup"] == "last"
assert got["with=equals,and,commas"] == "v=1,v=2"
assert got["spaced.key"] == "spaced value"
assert len(got["big.value"]) == 4096
assert got["service.instance.id"] == "not-ours" and got["telemetry.sdk.name"] == "proflink"
EOF
    # one warning for the malformed member, nothing else
    [ "$(grep -c 'proflink:' "$BATS_TEST_TMPDIR/drv.err")" = 1 ]
    grep -q 'malformed' "$BATS_TEST_TMPDIR/drv.err"
}

@test "module: invalid UTF-8 never reaches the payload (strict decoders would reject it all)" {
    libc_independent
    OTEL_SERVICE_NAME=$'bad\xffname' OTEL_RESOURCE_ATTRIBUTES='v=ok%FFok%C3,k%FE=x,good=yes' \
        bg drv "$DRIVER" publish 10
    read -r _ pid _ <"$BATS_TEST_TMPDIR/drv.out"
    read_ctx "$pid" # strict UTF-8 decoding of every string field
    [ "$(cget 'c["resource"]["service.name"]')" = 'bad?name' ]
    [ "$(cget 'c["resource"]["v"]')" = 'ok?ok?' ]
    [ "$(cget 'c["resource"]["good"]')" = yes ]
    [ "$(cget 'len([k for k in c["resource"] if k.startswith("k")])')" = 0 ]
    grep -q 'not UTF-8' "$BATS_TEST_TMPDIR/drv.err"
    grep -q 'replaced' "$BATS_TEST_TMPDIR/drv.err"
}

@test "module: the payload stays within 64 KiB; essentials kept, the overflow dropped with one warning" {
    libc_independent
    # 30 x 4 KiB: about twice what fits, and just under the kernel's 128 KiB limit for one
    # environment string (so OTEL_RESOURCE_ATTRIBUTES can never be much larger than this)
    attrs=$($PY -c 'print(",".join(f"big.{i:02d}=" + chr(97 + i % 26) * 4096 for i in range(30)))')
    OTEL_SERVICE_NAME=svc OTEL_RESOURCE_ATTRIBUTES="$attrs" bg drv "$DRIVER" publish 10
    read -r _ pid rc <"$BATS_TEST_TMPDIR/drv.out"
    [ "$rc" = 0 ]
    read_ctx "$pid"
    check_identity
    [ "$(cget 'c["resource"]["service.name"]')" = svc ]
    n=$(cget 'len([k for k in c["resource"] if k.startswith("big.")])')
    [ "$n" -ge 14 ]
    [ "$n" -lt 16 ]
    # kept in order, whole
    [ "$(cget 'all(c["resource"][f"big.{i:02d}"] == chr(97 + i % 26) * 4096 for i in range('"$n"'))')" = true ]
    [ "$(cget 'c["payload_size"] > 60000')" = true ]
    [ "$(grep -c 'proflink:' "$BATS_TEST_TMPDIR/drv.err")" = 1 ]
    grep -q "dropped (first: big.$n)" "$BATS_TEST_TMPDIR/drv.err"
}

@test "module: hundreds of small attributes fit and keep their order" {
    libc_independent
    attrs=$($PY -c 'print(",".join(f"k{i}=v{i}" for i in range(900)))')
    OTEL_RESOURCE_ATTRIBUTES="$attrs" bg drv "$DRIVER" publish 10
    read -r _ pid _ <"$BATS_TEST_TMPDIR/drv.out"
    read_ctx "$pid"
    check_identity
    [ "$(cget 'len(c["resource"])')" = 905 ]
    [ "$(cget '[k for k in c["resource"] if k[0] == "k"] == [f"k{i}" for i in range(900)]')" = true ]
    refute [ -s "$BATS_TEST_TMPDIR/drv.err" ]
}

@test "module: 128 KiB of OTEL_RESOURCE_ATTRIBUTES cost linear work, duplicates resolved" {
    # 24,000 short members (about the most one environment string can hold), every 100th key given
    # again at the end: each member used to be compared with every one published before it
    # (quadratic: over 0.5 s of CPU at start). Linear work is a few ms; the bound is generous.
    attrs=$($PY -c '
import string
d = string.digits + string.ascii_letters
k = [d[i // 3844] + d[i // 62 % 62] + d[i % 62] for i in range(24000)]
print(",".join([f"{x}=" for x in k] + [f"{x}=z" for x in k[::100]]))')
    [ "${#attrs}" -gt 120000 ]
    [ "${#attrs}" -lt 131000 ]
    cpu=$(OTEL_RESOURCE_ATTRIBUTES="$attrs" $PY -c '
import resource, subprocess, sys
subprocess.run([sys.argv[1], "publish", "0"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
r = resource.getrusage(resource.RUSAGE_CHILDREN)
print(f"{r.ru_utime + r.ru_stime:.3f}")' "$DRIVER")
    echo "CPU time: $cpu s"
    [ "$($PY -c "print(int($cpu < 0.25))")" = 1 ]
    # a duplicate is published once, with its last value, in its last place
    OTEL_RESOURCE_ATTRIBUTES='x=1,a=1,b=2,a=3,c=4,b=%35' bg drv "$DRIVER" publish 10
    read -r _ pid _ <"$BATS_TEST_TMPDIR/drv.out"
    read_ctx "$pid"
    check_identity
    [ "$(cget '[(k, v) for k, v in c["resource"].items() if len(k) == 1]')" = \
      '[["x", "1"], ["a", "3"], ["c", "4"], ["b", "5"]]' ]
}

@test "module: an update republishes in place with a strictly greater timestamp" {
    OTEL_RESOURCE_ATTRIBUTES='keep=me' bg drv "$DRIVER" update 5 10
    read -r _ pid _ <"$BATS_TEST_TMPDIR/drv.out"
    for _ in $(seq 50); do [ "$(wc -l <"$BATS_TEST_TMPDIR/drv.out")" -ge 6 ] && break; sleep 0.05; done
    # every update succeeded, each timestamp above the previous one
    awk '$1 == "update" { if ($3 != 0 || $4 <= prev) exit 1; prev = $4; n++ } END { exit n != 5 }' \
        "$BATS_TEST_TMPDIR/drv.out"
    read_ctx "$pid"
    check_identity
    [ "$(cget 'c["mappings_found"]')" = 1 ]
    [ "$(cget 'c["resource"]["test.seq"]')" = 5 ]
    [ "$(cget 'c["resource"]["keep"]')" = me ]
    [ "$(cget 'c["published_at_ns"]')" = "$(awk '$1 == "update" { t = $4 } END { print t }' "$BATS_TEST_TMPDIR/drv.out")" ]
}

@test "module: every publication and update calls prctl(PR_SET_VMA) on the header" {
    command -v strace >/dev/null || skip "strace is not installed"
    run strace -f -e trace=prctl,memfd_create -o "$BATS_TEST_TMPDIR/strace.txt" "$DRIVER" update 3 0
    [ "$status" -eq 0 ] || skip "cannot trace here: $output"
    [ "$(grep -c 'memfd_create("OTEL_CTX"' "$BATS_TEST_TMPDIR/strace.txt")" -ge 1 ]
    # the same address and name every time: 1 publication + 3 updates
    [ "$(grep -E 'prctl\(PR_SET_VMA, PR_SET_VMA_ANON_NAME, 0x[0-9a-f]+, [0-9]+, "OTEL_CTX"\)' "$BATS_TEST_TMPDIR/strace.txt" |
        grep -oE '0x[0-9a-f]+' | sort | uniq -c | awk '{print $1}')" = 4 ]
}

@test "module: a polling reader never accepts a payload that does not match its timestamp" {
    bg drv "$DRIVER" churn 3 "$BATS_TEST_TMPDIR/published.log"
    read -r _ pid _ <"$BATS_TEST_TMPDIR/drv.out"
    $READER "$pid" --poll 2.5 >"$BATS_TEST_TMPDIR/poll.jsonl"
    wait "$BG_PID"
    $PY - "$BATS_TEST_TMPDIR" <<'EOF'
import json, sys
d = sys.argv[1]
published = {}
for line in open(f"{d}/published.log"):
    seq, ts = line.split()
    published[int(ts)] = int(seq)
lines = [json.loads(l) for l in open(f"{d}/poll.jsonl")]
summary = lines.pop()["summary"]
for rec in lines:
    r = rec["resource"]
    if "test.seq" not in r:
        continue  # the first publication, before the loop
    seq = int(r["test.seq"])
    assert published.get(rec["ts"]) == seq, (rec["ts"], seq, published.get(rec["ts"]))
    assert r["test.tail"] == str(seq)
    assert r["test.fill"] == chr(97 + seq % 26) * (1 + seq * 37 % 3000)
print(f"# {len(published)} publications, {summary}", file=sys.stderr)
assert summary["accepted"] >= 20, summary
assert summary["raced"] >= 1, summary     # the reads did overlap updates
assert summary["undecodable"] == 0 and summary["invalid"] == 0, summary
EOF
}

@test "module: a fork child publishes its own context with a new service.instance.id" {
    OTEL_SERVICE_NAME=forky OTEL_RESOURCE_ATTRIBUTES='x=1' bg drv "$DRIVER" fork 10
    for _ in $(seq 100); do grep -q '^child' "$BATS_TEST_TMPDIR/drv.out" && break; sleep 0.05; done
    parent=$(awk '$1 == "parent" { print $2 }' "$BATS_TEST_TMPDIR/drv.out")
    child=$(awk '$1 == "child" { print $2 }' "$BATS_TEST_TMPDIR/drv.out")
    PIDS+=("$child")
    [ "$(awk '$1 == "child" { print $3 }' "$BATS_TEST_TMPDIR/drv.out")" = 0 ]
    read_ctx "$parent"
    check_identity
    cp "$BATS_TEST_TMPDIR/ctx.json" "$BATS_TEST_TMPDIR/parent.json"
    read_ctx "$child"
    check_identity
    [ "$(cget 'c["mappings_found"]')" = 1 ]
    $PY - "$BATS_TEST_TMPDIR" <<'EOF'
import json, sys
d = sys.argv[1]
p, c = (json.load(open(f"{d}/{n}.json")) for n in ("parent", "ctx"))
assert p["resource"]["service.instance.id"] != c["resource"]["service.instance.id"]
for r in (p, c):
    del r["resource"]["service.instance.id"]
assert p["resource"] == c["resource"] and p["attributes"] == c["attributes"]
assert c["resource"]["service.name"] == "forky" and c["resource"]["x"] == "1"
assert c["published_at_ns"] > p["published_at_ns"]
EOF
    refute [ -s "$BATS_TEST_TMPDIR/drv.err" ]
}

# anonymous_ctx_published — the driver (bg drv, PROFLINK_LOG=debug) published its context in an
# anonymous page, at the address it logged: read there, its identity, private and writable.
anonymous_ctx_published() {
    read -r _ pid rc <"$BATS_TEST_TMPDIR/drv.out"
    [ "$rc" = 0 ]
    addr=$(sed -n 's/.*OTEL_CTX: published at \(0x[0-9a-f]*\).*/\1/p' "$BATS_TEST_TMPDIR/drv.err")
    [ -n "$addr" ]
    refute grep -q memfd "/proc/$pid/maps"
    read_ctx "$pid" --address "$addr"
    check_identity
    [ "$(cget 'c["perms"]')" = rw-p ]
}

@test "module: memfd blocked by seccomp: the anonymous fallback is published" {
    PROFLINK_LOG=debug bg drv "$SECCOMP" memfd_create ENOSYS "$DRIVER" publish 10
    anonymous_ctx_published
    if grep -q 'prctl(PR_SET_VMA_ANON_NAME).*: ' "$BATS_TEST_TMPDIR/drv.err"; then
        # this kernel cannot name anonymous mappings: the memfd was tried, then unnamed, and we
        # said so
        grep -q 'memfd_create failed' "$BATS_TEST_TMPDIR/drv.err"
        [ "$(cget 'c["mapping_name"]')" = "" ]
        grep -q 'readers that look the context up by name will not find it' "$BATS_TEST_TMPDIR/drv.err"
    else
        # a kernel that names anonymous mappings: no memfd is made at all
        refute grep -q 'memfd_create' "$BATS_TEST_TMPDIR/drv.err"
        [ "$(cget 'c["mapping_name"]')" = "[anon:OTEL_CTX]" ]
        read_ctx "$pid" # and a reader finds it by name
    fi
}

@test "module: a kernel that names anonymous mappings: an anonymous page, no memfd made" {
    # A kernel with CONFIG_ANON_VMA_NAME answers 0 to prctl(PR_SET_VMA); here a filter answers
    # 0 without naming anything, so the page is anonymous and unnamed, found by its address.
    # (On a kernel without it, the same program without the filter uses a memfd: the test above.)
    PROFLINK_LOG=debug bg drv "$SECCOMP" prctl_set_vma OK "$DRIVER" publish 10
    anonymous_ctx_published
    refute grep -q 'memfd_create' "$BATS_TEST_TMPDIR/drv.err"
}

@test "module: prctl naming blocked: readers still find the memfd name" {
    bg drv "$SECCOMP" prctl_set_vma EINVAL "$DRIVER" publish 10
    read -r _ pid rc <"$BATS_TEST_TMPDIR/drv.out"
    [ "$rc" = 0 ]
    read_ctx "$pid"
    check_identity
    [ "$(cget 'c["mapping_name"]')" = "/memfd:OTEL_CTX (deleted)" ]
}

@test "module: without getrandom and /dev/urandom each process still gets its own instance id" {
    # the last source: getrandom fails (seccomp) and /dev/urandom reads nothing (/dev/null
    # mounted over it in a private mount namespace)
    unshare -m --propagation private true 2>/dev/null || skip "cannot make a private mount namespace here"
    local ids=() i
    for i in 1 2; do
        bg "drv$i" unshare -m --propagation private \
            sh -c 'mount --bind /dev/null /dev/urandom && exec "$@"' sh \
            "$SECCOMP" getrandom ENOSYS "$DRIVER" publish 10
        read -r _ pid rc <"$BATS_TEST_TMPDIR/drv$i.out"
        [ "$rc" = 0 ]
        read_ctx "$pid"
        check_identity
        ids+=("$(cget 'c["resource"]["service.instance.id"]')")
    done
    [ "${ids[0]}" != "${ids[1]}" ]
}

@test "module: a failed publication logs once and leaves nothing mapped" {
    bg drv "$SECCOMP" madvise_dontfork EINVAL "$DRIVER" publish 10
    read -r _ pid rc <"$BATS_TEST_TMPDIR/drv.out"
    [ "$rc" = -1 ]
    refute grep -q OTEL_CTX "/proc/$pid/maps"
    [ "$(grep -c 'proflink:' "$BATS_TEST_TMPDIR/drv.err")" = 1 ]
    grep -q 'MADV_DONTFORK' "$BATS_TEST_TMPDIR/drv.err"
}

@test "module: PROFLINK_OTEL_CONTEXT=0 publishes nothing" {
    PROFLINK_OTEL_CONTEXT=0 bg drv "$DRIVER" publish 10
    read -r _ pid rc <"$BATS_TEST_TMPDIR/drv.out"
    [ "$rc" = 0 ]
    refute grep -q OTEL_CTX "/proc/$pid/maps"
}

@test "module: the protobuf writer is canonical and never writes past its buffer" {
    libc_independent
    "$DRIVER" pbcheck >"$BATS_TEST_TMPDIR/pb.bin"
    protoc --decode_raw <"$BATS_TEST_TMPDIR/pb.bin" >/dev/null
    # the same message from an independent minimal encoder, byte for byte
    $PY - "$BATS_TEST_TMPDIR/pb.bin" <<'EOF'
import sys
def varint(v):
    out = bytearray()
    while v >= 0x80:
        out.append(v & 0x7F | 0x80)
        v >>= 7
    return bytes(out + bytes([v]))
def ld(field, body):
    return varint(field << 3 | 2) + varint(len(body)) + body
inner = ld(5, b"b" * 16383) + ld(5, b"b" * 16384) + varint(6 << 3) + varint(2**64 - 1)
outer = b"".join(ld(1, b"b" * n) for n in range(120, 131)) + ld(2, ld(3, ld(4, inner)))
want = ld(1, outer) + ld(2, b"tail")
got = open(sys.argv[1], "rb").read()
assert got == want, (len(got), len(want))
EOF
}

@test "reader: matches exactly the mapping names the readers accept" {
    libc_independent
    $PY - "$BATS_TEST_DIRNAME" <<'EOF'
import sys
sys.path.insert(0, sys.argv[1])
from otel_ctx_reader import is_context_mapping, parse_maps_line
def name_ok(line):
    m = parse_maps_line(line)
    return is_context_mapping(m[2], m[3])
base = "7f0000000000-7f0000001000 rw-p 00000000 00:01 1025                       "
for name in ("/memfd:OTEL_CTX (deleted)", "/memfd:OTEL_CTX", "[anon_shmem:OTEL_CTX]", "[anon:OTEL_CTX]"):
    assert name_ok(base + name + "\n"), name
for name in ("/memfd:OTEL_CTX2 (deleted)", "[anon:OTEL_CTX2]", "[anon:otel_ctx]", "/tmp/OTEL_CTX", ""):
    assert not name_ok(base + name + "\n"), name
assert not name_ok(base.replace("rw-p", "r-xp") + "[anon:OTEL_CTX]\n")
EOF
}

# ---- the library ---------------------------------------------------------------------------

@test "library: the context exists before main" {
    need_lib
    [ "$VARIANT" = glibc ] || skip "needs a program of this libc that prints its own maps"
    run env LD_PRELOAD="$LIB" cat /proc/self/maps
    [ "$status" -eq 0 ]
    echo "$output" | grep -qE ' (/memfd:OTEL_CTX \(deleted\)|\[anon_shmem:OTEL_CTX\]|\[anon:OTEL_CTX\])$'
}

@test "library: a preloaded program publishes its context" {
    need_lib
    OTEL_SERVICE_NAME=lib-svc OTEL_RESOURCE_ATTRIBUTES='deployment.environment.name=staging,team=core%2Cinfra' \
        bg_preloaded tgt "$HELPERS/target_threads" 1 10
    read_ctx "$BG_PID"
    check_identity
    [ "$(cget 'c["mappings_found"]')" = 1 ]
    [ "$(cget 'c["resource"]["service.name"]')" = lib-svc ]
    [ "$(cget 'c["resource"]["deployment.environment.name"]')" = staging ]
    [ "$(cget 'c["resource"]["team"]')" = core,infra ]
}

@test "library: a fork child gets its own context with a new service.instance.id" {
    need_lib
    [ -x "$HELPERS/target_fork" ] || skip "target_fork not built"
    OTEL_SERVICE_NAME=lib-fork bg_preloaded tgt "$HELPERS/target_fork" 10
    for _ in $(seq 100); do grep -q '^child' "$BATS_TEST_TMPDIR/tgt.out" && break; sleep 0.05; done
    child=$(awk '$1 == "child" { print $2 }' "$BATS_TEST_TMPDIR/tgt.out")
    [ -n "$child" ]
    PIDS+=("$child")
    read_ctx "$BG_PID"
    parent_id=$(cget 'c["resource"]["service.instance.id"]')
    read_ctx "$child"
    check_identity
    [ "$(cget 'c["mappings_found"]')" = 1 ]
    [ "$(cget 'c["resource"]["service.name"]')" = lib-fork ]
    [ "$(cget 'c["resource"]["service.instance.id"]')" != "$parent_id" ]
}

@test "library: PROFLINK_OTEL_CONTEXT=0 turns the process context off" {
    need_lib
    PROFLINK_OTEL_CONTEXT=0 bg tgt env LD_PRELOAD="$LIB" "$HELPERS/target_fork" 10
    for _ in $(seq 100); do grep -q '^child' "$BATS_TEST_TMPDIR/tgt.out" && break; sleep 0.05; done
    child=$(awk '$1 == "child" { print $2 }' "$BATS_TEST_TMPDIR/tgt.out")
    [ -n "$child" ]
    PIDS+=("$child")
    grep -q elastic-jvmti-linux-proflink "/proc/$BG_PID/maps" # the library is there, and active
    refute grep -q OTEL_CTX "/proc/$BG_PID/maps"
    refute grep -q OTEL_CTX "/proc/$child/maps"
}

@test "library: memfd blocked by seccomp: the anonymous fallback is published" {
    need_lib
    PROFLINK_LOG=debug bg drv "$SECCOMP" memfd_create ENOSYS \
        env LD_PRELOAD="$LIB" "$HELPERS/target_threads" 1 10 \
        || true # target_threads prints once its threads run; the context is there before that
    for _ in $(seq 100); do grep -q 'OTEL_CTX: published at' "$BATS_TEST_TMPDIR/drv.err" && break; sleep 0.05; done
    addr=$(sed -n 's/.*OTEL_CTX: published at \(0x[0-9a-f]*\).*/\1/p' "$BATS_TEST_TMPDIR/drv.err")
    [ -n "$addr" ]
    grep -q 'memfd_create failed' "$BATS_TEST_TMPDIR/drv.err"
    read_ctx "$BG_PID" --address "$addr"
    check_identity
    [ "$(cget 'c["mapping_name"]')" = "" ] || [ "$(cget 'c["mapping_name"]')" = "[anon:OTEL_CTX]" ]
}

@test "library: when publication fails the program runs exactly as without the library" {
    need_lib
    run "$SECCOMP" madvise_dontfork EINVAL env LD_PRELOAD="$LIB" "$HELPERS/target_threads" 1 0.2
    [ "$status" -eq 0 ]
    expected=$("$HELPERS/target_threads" 1 0.2 | sed 's/[0-9]\+/N/g')
    [ "$(echo "$output" | grep -v '^proflink:' | sed 's/[0-9]\+/N/g')" = "$expected" ]
    [ "$(echo "$output" | grep -c '^proflink:')" -le 1 ]
}
