#!/usr/bin/env bats
# proflink-inspect, the outside reader: it must reach the same verdict as the eBPF profiler's
# apmint integration. Checked against processes it must reject (no library, stand-in agents
# built or configured wrong, broken storage and sockets), against a stand-in built right (its
# ELF findings cross-checked with readelf), and against the real library.
#
# The stand-in agent ("fake") is a small C library written below and compiled per variant in
# setup_file; its constructor publishes storage, a socket and thread records as told by FAKE_*
# variables, then touches FAKE_READY.

[ -f "$BATS_TEST_DIRNAME/helpers.bash" ] && load helpers

ROOT=${ROOT:-$(cd "$BATS_TEST_DIRNAME/.." && pwd)}
INSPECT=${INSPECT:-$ROOT/build/proflink-inspect}
REAL_LIB=$ROOT/build/elastic-jvmti-linux-proflink-$(uname -m).so

case "$(uname -m)" in
x86_64) TLSDESC=R_X86_64_TLSDESC ;;
aarch64) TLSDESC=R_AARCH64_TLSDESC ;;
esac

# ---- helpers of this suite (ins_*: no clash with tests/helpers.bash) ----------------------



# built by make (tests/fixtures.mk): the stand-in agents, one folder per variant, and the host
FAKES=$ROOT/build/tests/fixtures/fakes
HOST=$ROOT/build/tests/fixtures/late_dlopen_host

setup() {
    INS_PID=
    INS_DIR=$(mktemp -d /tmp/pli.XXXXXX) # short: socket paths must fit sun_path
    chmod 755 "$INS_DIR"
}

teardown() {
    if [ -n "$INS_PID" ]; then
        kill -CONT "$INS_PID" 2>/dev/null || true
        kill "$INS_PID" 2>/dev/null || true
        wait "$INS_PID" 2>/dev/null || true
    fi
    rm -rf "$INS_DIR"
}

need_fakes() {
    [ -f "$FAKES/good/elastic-jvmti-linux-fake.so" ] || skip "the stand-in agents are built by make test-helpers"
}

need_root() {
    if [ "$(id -u)" != 0 ] || ! command -v setpriv >/dev/null; then skip "needs root and setpriv"; fi
}

# ins_wait_file FILE — until FILE exists (5 s).
ins_wait_file() {
    for _ in $(seq 100); do
        [ -e "$1" ] && return 0
        sleep 0.05
    done
    echo "$1 never appeared" >&2
    return 1
}

# ins_fake VARIANT [VAR=VALUE…] — runs `sleep` with the stand-in agent VARIANT preloaded and
# the given FAKE_* settings; returns once its constructor has finished. Sets INS_PID.
ins_fake() {
    local v=$1
    shift
    local lib
    lib=$(ls "$FAKES/$v"/*.so)
    env FAKE_SOCKET="$INS_DIR/fake.sock" FAKE_READY="$INS_DIR/ready" "$@" LD_PRELOAD="$lib" \
        sleep 60 3>&- &
    INS_PID=$!
    ins_wait_file "$INS_DIR/ready"
}

# ins_plain CMD… — runs CMD without any library; returns once it has exec'd. Sets INS_PID.
ins_plain() {
    "$@" 3>&- &
    INS_PID=$!
    local exe
    exe=$(command -v "$1")
    for _ in $(seq 100); do
        [ "$(readlink "/proc/$INS_PID/exe" 2>/dev/null)" = "$(readlink -f "$exe")" ] && return 0
        sleep 0.05
    done
    return 1
}

# ins_json PID [options] — proflink-inspect --json; output in $BATS_TEST_TMPDIR/ins.json,
# stderr in ins.err, exit status in INS_STATUS. The output must always be valid JSON.
ins_json() {
    local pid=$1
    shift
    INS_STATUS=0
    "$INSPECT" --json "$@" "$pid" >"$BATS_TEST_TMPDIR/ins.json" 2>"$BATS_TEST_TMPDIR/ins.err" ||
        INS_STATUS=$?
    json_eval_start
    json_get "$BATS_TEST_TMPDIR/ins.json" j 1 >/dev/null # it is JSON
}

# ins_get EXPR — a Python expression over the last ins_json output bound to j; lists, dicts,
# booleans and None print as JSON.
ins_get() { json_get "$BATS_TEST_TMPDIR/ins.json" j "$1"; }

# ins_check NAME — "status detail" of check NAME in the last ins_json output.
ins_check() {
    ins_get "next(c['status'] + ' ' + c['detail'] for c in j['checks'] if c['name'] == '$1')"
}

# ---- usage and processes that cannot be inspected ----------------------------------------

@test "--help explains the checks and exits 0" {
    run "$INSPECT" --help
    [ "$status" -eq 0 ]
    [[ "$output" == *"usage: proflink-inspect [--json] [--no-threads | --stop] PID"* ]]
    [[ "$output" == *"--no-threads"* ]]
}

@test "usage errors exit 2" {
    run "$INSPECT"
    [ "$status" -eq 2 ]
    [[ "$output" == *usage:* ]]
    run "$INSPECT" not-a-pid
    [ "$status" -eq 2 ]
    [[ "$output" == *"not a process id: not-a-pid"* ]]
    run "$INSPECT" --bogus 1
    [ "$status" -eq 2 ]
    run "$INSPECT" 1 2
    [ "$status" -eq 2 ]
    run "$INSPECT" -- -5
    [ "$status" -eq 2 ]
}

@test "a pid that does not exist: exit 2, 'no such process', JSON error object" {
    local pid=$(($(cat /proc/sys/kernel/pid_max) + 1)) # above pid_max: never a live pid
    run "$INSPECT" "$pid"
    [ "$status" -eq 2 ]
    [[ "$output" == *"no such process: $pid"* ]]
    ins_json "$pid"
    [ "$INS_STATUS" -eq 2 ]
    [ "$(ins_get 'j["pid"]')" = "$pid" ]
    [[ "$(ins_get 'j["error"]')" == *"no such process"* ]]
}

@test "permission denied is reported as such, exit 2" {
    need_root
    ins_plain sleep 60
    run setpriv --reuid=65534 --regid=65534 --clear-groups "$INSPECT" "$INS_PID"
    [ "$status" -eq 2 ]
    [[ "$output" == *"permission denied"* ]]
}

# ---- a process without the library ------------------------------------------------------

@test "a process without the library: mapping FAIL, the rest SKIP, exit 1" {
    ins_plain sleep 60
    run "$INSPECT" "$INS_PID"
    [ "$status" -eq 1 ]
    [[ "$output" == *"FAIL  mapping"* ]]
    [[ "$output" == *"SKIP  elf"* ]]
    [[ "$output" == *"NOT attachable"* ]]
    ins_json "$INS_PID"
    [ "$INS_STATUS" -eq 1 ]
    [ "$(ins_get 'j["attachable"]')" = false ]
    [ "$(ins_get '[c["name"] for c in j["checks"]]')" = \
        '["mapping", "elf", "tls", "storage", "socket", "threads", "otel"]' ]
    [ "$(ins_get 'j["checks"][0]["ok"]')" = false ]
    [ "$(ins_get '[c["status"] for c in j["checks"][1:6]]')" = \
        '["skip", "skip", "skip", "skip", "skip"]' ]
    [ "$(ins_get 'j["library"]')" = null ]
    [ "$(ins_get 'j["storage"]')" = null ]
    [ "$(ins_get 'j["threads"]')" = null ]
    [ "$(ins_get 'j["otel_process_context"]["found"]')" = false ]
    [ "$(ins_get 'j["comm"]')" = sleep ]
}

# ---- the stand-in agent built right ------------------------------------------------------

@test "fake agent built right: attachable, storage, socket, thread records, OTel context" {
    need_fakes
    ins_fake good FAKE_OTEL_CTX=1 FAKE_SERVICE=svc-a FAKE_ENV=staging
    run "$INSPECT" "$INS_PID"
    [ "$status" -eq 0 ]
    [[ "$output" == *"result: attachable"* ]]
    ins_json "$INS_PID"
    [ "$INS_STATUS" -eq 0 ]
    [ "$(ins_get 'j["attachable"]')" = true ]
    [ "$(ins_get '[c["status"] for c in j["checks"]]')" = \
        '["pass", "pass", "pass", "pass", "pass", "pass", "pass"]' ]
    [ "$(ins_get 'j["library"]["path"]')" = "$FAKES/good/elastic-jvmti-linux-fake.so" ]
    [ "$(ins_get 'j["storage"]["minor"]')" = 1 ]
    [ "$(ins_get 'j["storage"]["service_name"]')" = svc-a ]
    [ "$(ins_get 'j["storage"]["service_environment"]')" = staging ]
    [ "$(ins_get 'j["storage"]["socket_path"]')" = "$INS_DIR/fake.sock" ]
    [ "$(ins_get 'j["socket"]["path"]')" = "/proc/$INS_PID/root$INS_DIR/fake.sock" ]
    [ "$(ins_get 'j["socket"]["connect"]')" = ok ]
    # static TLS: below the thread pointer on x86_64, above it on aarch64
    if [ "$(uname -m)" = x86_64 ]; then
        [ "$(ins_get 'j["tls_offset"] < 0 and j["otel_tls_offset"] < 0')" = true ]
    else
        [ "$(ins_get 'j["tls_offset"] > 0 and j["otel_tls_offset"] > 0')" = true ]
    fi
    [ "$(ins_get 'len(j["threads"])')" = 1 ]
    [ "$(ins_get 'j["threads"][0]["tid"]')" = "$INS_PID" ]
    [ "$(ins_get 'j["threads"][0]["comm"]')" = sleep ]
    [ "$(ins_get 'j["threads"][0]["apm"]["valid"], j["threads"][0]["apm"]["trace_present"], j["threads"][0]["apm"]["trace_flags"]')" = "(1, 1, 1)" ]
    [ "$(ins_get 'j["threads"][0]["apm"]["trace_id"]')" = 0102030405060708090a0b0c0d0e0f10 ]
    [ "$(ins_get 'j["threads"][0]["apm"]["span_id"]')" = 1112131415161718 ]
    [ "$(ins_get 'j["threads"][0]["apm"]["transaction_id"]')" = 2122232425262728 ]
    [ "$(ins_get 'j["threads"][0]["otel"]["trace_id"]')" = 0102030405060708090a0b0c0d0e0f10 ]
    [ "$(ins_get 'j["threads"][0]["otel"]["attributes"]')" = '{"local_root_span_id": "2122232425262728"}' ]
    [ "$(ins_get 'j["otel_process_context"]["found"], j["otel_process_context"]["valid"]')" = "(True, True)" ]
    [ "$(ins_get 'j["otel_process_context"]["version"]')" = 2 ]
    [ "$(ins_get 'j["otel_process_context"]["published_at_ns"]')" = 12345 ]
    [ "$(ins_get 'j["otel_process_context"]["resource"]')" = '{"service.name": "fake-service"}' ]
    [ "$(ins_get 'j["otel_process_context"]["attributes"]["threadlocal.attribute_key_map"]')" = \
        '["local_root_span_id", "method"]' ]
}

@test "fake agent: symbol, relocation and load bias agree with readelf and the maps" {
    need_fakes
    command -v readelf >/dev/null || skip "needs readelf"
    local so=$FAKES/good/elastic-jvmti-linux-fake.so
    ins_fake good
    ins_json "$INS_PID" --no-threads
    local off sym
    off=$(readelf -rW "$so" | awk -v t="$TLSDESC" '$3 == t && $5 == "elastic_apm_profiling_correlation_tls_v1" { print $1 }')
    sym=$(readelf -sW --dyn-syms "$so" | awk '$8 == "elastic_apm_profiling_correlation_process_storage_v1" { print $2; exit }')
    [ -n "$off" ] && [ -n "$sym" ]
    [ "$(ins_get 'int(j["library"]["tlsdesc_offset"], 16)')" = "$((16#$off))" ]
    [ "$(ins_get 'int(j["library"]["storage_symbol"], 16)')" = "$((16#$sym))" ]
    # the load bias is where the file's first page is mapped (first PT_LOAD at vaddr 0)
    local first
    first=$(awk -v p="$so" '$6 == p && $3 == "00000000" { split($1, a, "-"); print a[1]; exit }' "/proc/$INS_PID/maps")
    [ "$(ins_get 'int(j["library"]["load_bias"], 16)')" = "$((16#$first))" ]
    # and the storage pointer read through it is where the storage really is
    [ "$(ins_get 'int(j["storage"]["address"], 16) != 0')" = true ]
}

@test "a library with only DT_HASH (no DT_GNU_HASH) is found through DT_HASH" {
    need_fakes
    ins_fake sysv
    ins_json "$INS_PID" --no-threads
    [ "$INS_STATUS" -eq 0 ]
    [[ "$(ins_check elf)" == "pass "*"(via DT_HASH)"* ]]
}

@test "threads: each is listed, a NULL TLS pointer gives null records, none is left stopped" {
    need_fakes
    env FAKE_SOCKET="$INS_DIR/fake.sock" HOST_READY="$INS_DIR/ready" \
        LD_PRELOAD="$FAKES/good/elastic-jvmti-linux-fake.so" "$HOST" - 3 3>&- &
    INS_PID=$!
    ins_wait_file "$INS_DIR/ready"
    ins_json "$INS_PID"
    [ "$INS_STATUS" -eq 0 ]
    [ "$(ins_get 'len(j["threads"])')" = 4 ]
    [ "$(ins_get '[t["tid"] for t in j["threads"]] == sorted(t["tid"] for t in j["threads"])')" = true ]
    # the constructor ran on the main thread only; the others never set their pointers
    [ "$(ins_get 'j["threads"][0]["apm"]["valid"]')" = 1 ]
    [ "$(ins_get '[t["apm"] for t in j["threads"][1:]]')" = '[null, null, null]' ]
    [ "$(ins_get '[t["otel"] for t in j["threads"][1:]]')" = '[null, null, null]' ]
    [ "$(ins_get 'all(t["thread_pointer"].startswith("0x") and "error" not in t for t in j["threads"])')" = true ]
    every_line <(grep -h '^State:' /proc/"$INS_PID"/task/*/status) . 'S \(sleeping\)'
    # a stopped process stays stopped, and runs again on SIGCONT
    kill -STOP "$INS_PID"
    sleep 0.2
    ins_json "$INS_PID"
    [ "$INS_STATUS" -eq 0 ]
    [ "$(ins_get 'j["threads"][0]["apm"]["valid"]')" = 1 ]
    every_line <(grep -h '^State:' /proc/"$INS_PID"/task/*/status) . 'T \(stopped\)'
    kill -CONT "$INS_PID"
    sleep 0.2
    every_line <(grep -h '^State:' /proc/"$INS_PID"/task/*/status) . 'S \(sleeping\)'
}

@test "--no-threads: no ptrace, threads SKIP and null" {
    need_fakes
    ins_fake good
    ins_json "$INS_PID" --no-threads
    [ "$INS_STATUS" -eq 0 ]
    [[ "$(ins_check threads)" == "skip "*"--no-threads"* ]]
    [ "$(ins_get 'j["threads"]')" = null ]
}

@test "strings the target publishes are escaped: JSON stays valid and round-trips" {
    need_fakes
    ins_fake good FAKE_SERVICE=$'q"b\\s\tt\nn\x01c-\xc3\xa9-\xff' FAKE_ENV=$'\xe2\x82'
    ins_json "$INS_PID" --no-threads
    [ "$INS_STATUS" -eq 0 ]
    [ "$(ins_get 'j["storage"]["service_name"] == "q\"b\\s\tt\nn\x01c-\u00e9-\ufffd"')" = true ]
    [ "$(ins_get 'j["storage"]["service_environment"] == "\ufffd\ufffd"')" = true ]
    run "$INSPECT" --no-threads "$INS_PID"
    [[ "$output" == *'service-name "q\"b\\s\x09t\x0an\x01c-'* ]]
}

# ---- the ELF checks: built wrong ---------------------------------------------------------

@test "a file name that does not match elastic-jvmti-linux-*.so: mapping FAIL" {
    need_fakes
    ins_fake name
    run "$INSPECT" --no-threads "$INS_PID"
    [ "$status" -eq 1 ]
    [[ "$output" == *"FAIL  mapping"* ]]
}

@test "default (traditional) TLS dialect: no TLSDESC relocation, elf FAIL" {
    need_fakes
    ins_fake trad
    ins_json "$INS_PID"
    [ "$INS_STATUS" -eq 1 ]
    [[ "$(ins_check elf)" == "fail no TLSDESC relocation names elastic_apm_profiling_correlation_tls_v1, only "*DTPMOD64* ]]
    [[ "$(ins_check tls)" == skip* ]]
    [[ "$(ins_check storage)" == skip* ]]
    [[ "$(ins_check threads)" == skip* ]]
}

@test "initial-exec TLS: elf FAIL" {
    need_fakes
    ins_fake ie
    ins_json "$INS_PID" --no-threads
    [ "$INS_STATUS" -eq 1 ]
    [[ "$(ins_check elf)" == "fail "*"initial-exec"* ]]
}

@test "a hidden TLS variable: its TLSDESC names no symbol, elf FAIL" {
    need_fakes
    ins_fake hidden
    ins_json "$INS_PID" --no-threads
    [ "$INS_STATUS" -eq 1 ]
    [[ "$(ins_check elf)" == "fail no TLS relocation names elastic_apm_profiling_correlation_tls_v1"* ]]
}

@test "storage symbol with st_size 16: elf FAIL (the profiler wants exactly 8)" {
    need_fakes
    ins_fake size
    ins_json "$INS_PID" --no-threads
    [ "$INS_STATUS" -eq 1 ]
    [[ "$(ins_check elf)" == "fail "*"st_size 16"* ]]
}

@test "no section headers: elf FAIL" {
    need_fakes
    ins_fake nosh
    ins_json "$INS_PID" --no-threads
    [ "$INS_STATUS" -eq 1 ]
    [[ "$(ins_check elf)" == "fail no section headers"* ]]
}

@test "a late dlopen that lands in dynamic TLS: tls FAIL, storage still read" {
    need_fakes
    # glibc puts a late-loaded library's TLSDESC variables in static TLS while its surplus
    # lasts; without surplus they are dynamic, and the descriptor argument is a pointer.
    env FAKE_SOCKET="$INS_DIR/fake.sock" FAKE_READY="$INS_DIR/ready" \
        GLIBC_TUNABLES=glibc.rtld.optional_static_tls=0 \
        "$HOST" "$FAKES/good/elastic-jvmti-linux-fake.so" 0 3>&- &
    INS_PID=$!
    ins_wait_file "$INS_DIR/ready"
    ins_json "$INS_PID"
    [ "$INS_STATUS" -eq 1 ]
    [[ "$(ins_check tls)" == "fail "*"not a static TLS offset"* ]]
    [[ "$(ins_check storage)" == pass* ]]
    [[ "$(ins_check threads)" == skip* ]]
    [ "$(ins_get 'j["tls_offset"]')" = null ]
}

# ---- the storage and socket checks: configured wrong -------------------------------------

@test "storage pointer still NULL: storage FAIL, socket SKIP" {
    need_fakes
    ins_fake good FAKE_NO_PUBLISH=1
    ins_json "$INS_PID" --no-threads
    [ "$INS_STATUS" -eq 1 ]
    [[ "$(ins_check storage)" == "fail "*"is NULL"* ]]
    [[ "$(ins_check socket)" == skip* ]]
    [ "$(ins_get 'j["storage"]')" = null ]
}

@test "service name of 129 bytes: storage FAIL; 128 bytes: attachable" {
    need_fakes
    ins_fake good FAKE_SERVICE="$(printf 'n%.0s' $(seq 129))"
    ins_json "$INS_PID" --no-threads
    [ "$INS_STATUS" -eq 1 ]
    [[ "$(ins_check storage)" == "fail service-name is 129 bytes"* ]]
    teardown
    setup
    ins_fake good FAKE_SERVICE="$(printf 'n%.0s' $(seq 128))"
    ins_json "$INS_PID" --no-threads
    [ "$INS_STATUS" -eq 0 ]
    [ "$(ins_get 'len(j["storage"]["service_name"])')" = 128 ]
}

@test "socket file missing, a regular file, a stream socket, or nobody bound: socket FAIL" {
    need_fakes
    local kind expect
    for kind in none file stream unbound; do
        case $kind in
        none) expect="No such file or directory" ;;
        file) expect="is not a socket" ;;
        stream) expect="is not a datagram socket" ;;
        unbound) expect="nobody is bound to it" ;;
        esac
        ins_fake good FAKE_SOCKET_KIND=$kind
        ins_json "$INS_PID" --no-threads
        [ "$INS_STATUS" -eq 1 ]
        [[ "$(ins_check socket)" == "fail "*"$expect"* ]]
        [ "$(ins_get 'j["attachable"]')" = false ]
        teardown
        setup
    done
}

@test "socket path: '..' that survives cleaning FAILs, '..' that cleaning removes passes" {
    need_fakes
    ins_fake good FAKE_SOCKET_KIND=none FAKE_SOCKET=../x.sock
    ins_json "$INS_PID" --no-threads
    [[ "$(ins_check socket)" == "fail "*"escapes the root"* ]]
    teardown
    setup
    mkdir "$INS_DIR/sub"
    ins_fake good FAKE_SOCKET="$INS_DIR/sub/../fake.sock"
    ins_json "$INS_PID" --no-threads
    [ "$INS_STATUS" -eq 0 ]
    [ "$(ins_get 'j["socket"]["path"]')" = "/proc/$INS_PID/root$INS_DIR/fake.sock" ]
}

@test "/proc/PID/root + socket path longer than sun_path: socket FAIL, with the length" {
    need_fakes
    # the target binds it (<= 107 bytes), but the profiler's /proc/PID/root prefix overflows
    local dir
    dir=$INS_DIR/$(printf 'd%.0s' $(seq 75))
    mkdir "$dir"
    ins_fake good FAKE_SOCKET="$dir/s.sock"
    ins_json "$INS_PID" --no-threads
    [ "$INS_STATUS" -eq 1 ]
    local len=$((${#INS_PID} + 11 + ${#dir} + 7))
    [[ "$(ins_check socket)" == "fail "*"is $len bytes, more than sun_path holds (107)"* ]]
    [ "$(ins_get 'j["socket"]["path_len"]')" = "$len" ]
}

@test "socket mode bits are checked against the target's effective uid and gid" {
    need_fakes
    need_root
    chmod 1777 "$INS_DIR"
    # the bats temporary directory is private to root: give nobody its own copy of the agent
    mkdir -m 755 "$INS_DIR/lib"
    cp "$FAKES/good/elastic-jvmti-linux-fake.so" "$INS_DIR/lib/"
    chmod 755 "$INS_DIR/lib/elastic-jvmti-linux-fake.so"
    local mode want
    for mode in 0400 0600 0460 0402; do
        case $mode in
        0400) want="fail" ;;
        0600) want="pass owner" ;;
        0460) want="pass group" ;;
        0402) want="pass others" ;;
        esac
        setpriv --reuid=65534 --regid=65534 --clear-groups env FAKE_SOCKET="$INS_DIR/s$mode.sock" \
            FAKE_SOCKET_MODE=$mode FAKE_READY="$INS_DIR/ready$mode" \
            LD_PRELOAD="$INS_DIR/lib/elastic-jvmti-linux-fake.so" sleep 60 3>&- &
        INS_PID=$!
        ins_wait_file "$INS_DIR/ready$mode"
        ins_json "$INS_PID" --no-threads
        [ "$(ins_get 'j["socket"]["target_euid"]')" = 65534 ]
        if [ "$want" = fail ]; then
            [ "$INS_STATUS" -eq 1 ]
            [[ "$(ins_check socket)" == "fail "*"not writable by the target's euid 65534"* ]]
        else
            [ "$INS_STATUS" -eq 0 ]
            [ "pass $(ins_get 'j["socket"]["access"]')" = "$want" ]
        fi
        kill "$INS_PID"
        wait "$INS_PID" 2>/dev/null || true
        INS_PID=
    done
}

# ---- the real library --------------------------------------------------------------------

@test "real library under sleep: attachable, unknown_service:sleep, socket in /tmp" {
    [ -f "$REAL_LIB" ] || skip "library not built"
    env -u ELASTIC_OTEL_UNIVERSAL_PROFILING_INTEGRATION_SOCKET_DIR -u TMPDIR \
        -u OTEL_SERVICE_NAME -u ELASTIC_APM_SERVICE_NAME -u OTEL_RESOURCE_ATTRIBUTES \
        LD_PRELOAD="$REAL_LIB" sleep 5 3>&- &
    INS_PID=$!
    for _ in $(seq 100); do
        "$INSPECT" --no-threads "$INS_PID" >/dev/null 2>&1 && break
        sleep 0.05
    done
    run "$INSPECT" "$INS_PID"
    [ "$status" -eq 0 ]
    [[ "$output" == *"result: attachable"* ]]
    ins_json "$INS_PID"
    [ "$INS_STATUS" -eq 0 ]
    [ "$(ins_get 'j["storage"]["service_name"]')" = unknown_service:sleep ]
    [[ "$(ins_get 'j["storage"]["socket_path"]')" == /tmp/*.sock ]]
    [ "$(ins_get 'j["socket"]["connect"]')" = ok ]
    [ "$(ins_get 'j["library"]["path"]')" = "$REAL_LIB" ]
    [ "$(ins_get 'j["threads"][0]["apm"]["minor"], j["threads"][0]["apm"]["valid"]')" = "(1, 1)" ]
}

@test "real library with TRACEPARENT: both thread records and the OTel process context" {
    [ -f "$REAL_LIB" ] || skip "library not built"
    TRACEPARENT=00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01 OTEL_SERVICE_NAME=tp-svc \
        LD_PRELOAD="$REAL_LIB" sleep 5 3>&- &
    INS_PID=$!
    for _ in $(seq 100); do
        "$INSPECT" --no-threads "$INS_PID" >/dev/null 2>&1 && break
        sleep 0.05
    done
    ins_json "$INS_PID"
    [ "$INS_STATUS" -eq 0 ]
    [ "$(ins_get 'j["threads"][0]["apm"]["trace_present"]')" = 1 ]
    [ "$(ins_get 'j["threads"][0]["apm"]["trace_id"]')" = 0af7651916cd43dd8448eb211c80319c ]
    [ "$(ins_get 'j["threads"][0]["apm"]["transaction_id"]')" = b7ad6b7169203331 ]
    [ "$(ins_get 'j["otel_tls_offset"] is not None')" = true ]
    if [ "$(ins_get 'j["threads"][0]["otel"] is not None')" = true ]; then
        [ "$(ins_get 'j["threads"][0]["otel"]["span_id"]')" = b7ad6b7169203331 ]
    fi
    if [ "$(ins_get 'j["otel_process_context"]["found"]')" = true ]; then
        [ "$(ins_get 'j["otel_process_context"]["valid"]')" = true ]
        [ "$(ins_get 'j["otel_process_context"]["resource"]["service.name"]')" = tp-svc ]
    fi
}
