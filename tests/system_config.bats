#!/usr/bin/env bats
# The system configuration file /etc/proflink/proflink.conf, for /etc/ld.so.preload deployments:
# honoured only when owned by root and writable by nobody else; PROFLINK_INCLUDE/EXCLUDE and
# ENABLED there select which programs activate. Each run happens in a private mount namespace
# whose /etc is an overlay (or a copy): the host's /etc is never touched. Whether a program
# activated is read from outside with proflink-inspect, as the profiler would.
# shellcheck shell=bash
# modules: preload/config/config_file.c preload/config/config.c
load helpers
bats_require_minimum_version 1.5.0

setup_file() {
    local d=$BATS_FILE_TMPDIR
    # ns_conf.sh LIB MODE OWNER CONF CMD ARGS...: CMD in a mount namespace where
    # /etc/ld.so.preload lists LIB and /etc/proflink/proflink.conf holds CONF (MODE, OWNER)
    cat >"$d/ns_conf.sh" <<'SH'
#!/bin/sh
lib=$1 mode=$2 owner=$3 conf=$4
shift 4
m=$(mktemp -d "${NS_TMP:-/tmp}/plns.XXXXXX") || exit 90
mount -t tmpfs tmpfs "$m" || exit 91
mkdir "$m/up" "$m/work" "$m/etc"
if ! mount -t overlay overlay -o "lowerdir=/etc,upperdir=$m/up,workdir=$m/work" /etc 2>/dev/null; then
    cp -a /etc/. "$m/etc/" && mount --bind "$m/etc" /etc || exit 92
fi
mkdir -p /etc/proflink && printf '%s\n' "$conf" >/etc/proflink/proflink.conf || exit 93
chmod "$mode" /etc/proflink/proflink.conf && chown "$owner" /etc/proflink/proflink.conf || exit 94
printf '%s\n' "$lib" >/etc/ld.so.preload || exit 95
exec "$@"
SH
    chmod +x "$d/ns_conf.sh"
    export NS_TMP=$d
    if ! unshare -m --propagation private "$d/ns_conf.sh" /nonexistent.so 644 0 "" true 2>"$d/ns.err"; then
        echo "skip: cannot make a private mount namespace here ($(head -c 200 "$d/ns.err"))" >"$d/skip"
    fi
}

setup() {
    [ ! -f "$BATS_FILE_TMPDIR/skip" ] || skip "$(cut -d: -f2- "$BATS_FILE_TMPDIR/skip")"
    setup_sockdir
    export NS_TMP=$BATS_FILE_TMPDIR PROFLINK_LOG=info
    PIDS=()
}

teardown() {
    stop_pids "${PIDS[@]}"
    rm -rf "$SOCKDIR"
}

# start MODE OWNER CONF NAME CMD...: CMD (exec'd by the namespace script, so $! is its pid) in
# the background; stderr to $BATS_TEST_TMPDIR/NAME.err; sets PID
start() {
    local mode=$1 owner=$2 conf=$3 name=$4
    shift 4
    unshare -m --propagation private "$BATS_FILE_TMPDIR/ns_conf.sh" "$LIB" "$mode" "$owner" "$conf" \
        "$@" 2>"$BATS_TEST_TMPDIR/$name.err" &
    PID=$!
    PIDS+=("$PID")
}

# the library said what it decided (active or inactive), so the check below is not too early
wait_decided() {
    local f=$BATS_TEST_TMPDIR/$1.err i
    for i in $(seq 100); do
        grep -qE 'proflink: .*(active|inactive)' "$f" 2>/dev/null && return 0
        sleep 0.05
    done
    echo "no decision logged:" >&2
    cat "$f" >&2
    return 1
}

@test "system config: ENABLED=false in a root-owned 0644 file keeps programs inactive, and says why" {
    start 644 0 "ELASTIC_OTEL_UNIVERSAL_PROFILING_INTEGRATION_ENABLED=false" s sleep 30
    wait_decided s
    grep -q 'inactive: ELASTIC_OTEL_UNIVERSAL_PROFILING_INTEGRATION_ENABLED is false' "$BATS_TEST_TMPDIR/s.err"
    run "$INSPECT" --no-threads "$PID"
    [ "$status" -eq 1 ]
    # the inspector finds the cause in the target's own /etc (its mount namespace)
    grep -A1 '^FAIL  storage' <<<"$output" |
        grep -qF 'fix: disabled by ELASTIC_OTEL_UNIVERSAL_PROFILING_INTEGRATION_ENABLED=false in /etc/proflink/proflink.conf; remove it'
}

@test "system config: a file writable by group or others, or not owned by root, is ignored" {
    local conf="ELASTIC_OTEL_UNIVERSAL_PROFILING_INTEGRATION_ENABLED=false" i=0 case
    for case in "664 0" "646 0" "644 65534"; do
        i=$((i + 1))
        # shellcheck disable=SC2086 # MODE OWNER
        start $case "$conf" "c$i" sleep 30
        wait_attachable "$PID"
        grep -q 'proflink.conf ignored: it must be owned by root and writable by nobody else' \
            "$BATS_TEST_TMPDIR/c$i.err"
    done
}

@test "system config: PROFLINK_INCLUDE selects programs, the others stay inactive" {
    local conf="PROFLINK_INCLUDE=*/sleep"
    start 644 0 "$conf" in sleep 30
    wait_attachable "$PID"
    start 644 0 "$conf" out tail -f /dev/null
    wait_decided out
    grep -q 'inactive: .*/tail is not selected' "$BATS_TEST_TMPDIR/out.err"
    run "$INSPECT" --no-threads "$PID"
    [ "$status" -eq 1 ]
    grep -A1 '^FAIL  storage' <<<"$output" |
        grep -qF "fix: not selected: $(command -v tail) is not matched by PROFLINK_INCLUDE=*/sleep (/etc/proflink/proflink.conf); add it there"
}

@test "system config: PROFLINK_EXCLUDE keeps the programs it names inactive; the environment wins" {
    local conf="# comment
  PROFLINK_EXCLUDE = */sleep  "
    start 644 0 "$conf" ex sleep 30
    wait_decided ex
    grep -q 'inactive: .*/sleep is not selected' "$BATS_TEST_TMPDIR/ex.err"
    run "$INSPECT" --no-threads "$PID"
    [ "$status" -eq 1 ]
    start 644 0 "$conf" ok tail -f /dev/null
    wait_attachable "$PID"
    PROFLINK_EXCLUDE=/nothing start 644 0 "$conf" env sleep 30
    wait_attachable "$PID"
}

@test "system config: a line that is not accepted never reaches a program's stderr; status and inspect report it" {
    local conf=$'PROFLINK_HTTP=1\nnot a setting\nPROFLINK_INHERIT=0' prog
    # the host's programs, each with the library listed system-wide and no PROFLINK_LOG of its own
    for prog in true "ls /" "date"; do
        # shellcheck disable=SC2086 # PROG ARGS
        run --separate-stderr env -u PROFLINK_LOG unshare -m --propagation private \
            "$BATS_FILE_TMPDIR/ns_conf.sh" "$LIB" 644 0 "$conf" $prog
        echo "$prog: status $status, stderr: $stderr"
        [ "$status" -eq 0 ]
        [ -z "$stderr" ]
    done
    run unshare -m --propagation private "$BATS_FILE_TMPDIR/ns_conf.sh" "$LIB" 644 0 "$conf" \
        "$ROOT/scripts/proflink-system" status
    echo "$output"
    grep -qxF 'ignored: /etc/proflink/proflink.conf:1: PROFLINK_HTTP cannot be set there' <<<"$output"
    grep -qxF 'ignored: /etc/proflink/proflink.conf:2: not KEY=VALUE' <<<"$output"
    [ "$(grep -c '^ignored:' <<<"$output")" -eq 2 ]
    unset PROFLINK_LOG
    start 644 0 "$conf" s sleep 30
    wait_attachable "$PID"
    run "$INSPECT" --no-threads "$PID"
    echo "$output"
    grep -qF 'WARN  config   /etc/proflink/proflink.conf:1: PROFLINK_HTTP cannot be set there; ignored' <<<"$output"
    grep -qF 'WARN  config   /etc/proflink/proflink.conf:2: not KEY=VALUE; ignored' <<<"$output"
    [ "$(grep -c '^WARN  config' <<<"$output")" -eq 2 ]
    run "$INSPECT" --json --no-threads "$PID"
    python3 -c 'import json,sys; d=json.load(sys.stdin); d=d[0] if isinstance(d,list) else d; assert len(d["config_ignored"])==2, d["config_ignored"]' <<<"$output"
    [ ! -s "$BATS_TEST_TMPDIR/s.err" ]
}

@test "system config: the library, proflink-system and the tools accept the same keys" {
    local lib tools sys
    lib=$(sed -n '/^static const char \*const allowed\[\]/,/^};/s/^ *"\([A-Z_]*\)",$/\1/p' \
        "$ROOT/preload/config/config_file.c" | sort)
    tools=$(sed -n '/^static const char \*const conf_keys\[\]/,/^};/s/^ *"\{0,1\}\([A-Z_]*\)"\{0,1\},$/\1/p' \
        "$ROOT/tools/common/target_selection.c" | sed 's/^ENABLED_KEY$/ELASTIC_OTEL_UNIVERSAL_PROFILING_INTEGRATION_ENABLED/' | sort)
    sys=$(sed -n 's/^ *n = split("\([A-Z_ ]*\)".*/\1/p' "$ROOT/scripts/proflink-system" | tr ' ' '\n' | sort)
    echo "library: $lib"
    [ "$(wc -l <<<"$lib")" -ge 8 ]
    [ "$lib" = "$tools" ]
    [ "$lib" = "$sys" ]
}

@test "system config: a program its PROFLINK_INCLUDE leaves out makes no system call an empty listed library does not cause" {
    command -v strace >/dev/null || skip "strace is not installed"
    local d=$BATS_TEST_TMPDIR extra
    echo 'int proflink_test_empty;' | gcc -shared -fPIC -x c - -o "$d/libempty.so"
    mkdir -p "$d/usr/bin"
    cp "$HELPERS/target_threads" "$d/usr/bin/prog"
    ln -s usr/bin "$d/bin" # reached through a link, as on merged /usr
    unset PROFLINK_LOG
    unshare -m --propagation private "$BATS_FILE_TMPDIR/ns_conf.sh" "$d/libempty.so" 644 0 \
        "PROFLINK_INCLUDE=/nothing" strace -f -qq -o "$d/empty.log" "$d/bin/prog" 1 0
    unshare -m --propagation private "$BATS_FILE_TMPDIR/ns_conf.sh" "$LIB" 644 0 \
        "PROFLINK_INCLUDE=/nothing" strace -f -qq -o "$d/with.log" "$d/bin/prog" 1 0
    grep -q 'proflink.conf' "$d/with.log" # the library read the file
    extra=$(comm -13 <(sed -n 's/^[0-9]* *\([a-z_0-9]*\)(.*/\1/p' "$d/empty.log" | sort -u) \
        <(sed -n 's/^[0-9]* *\([a-z_0-9]*\)(.*/\1/p' "$d/with.log" | sort -u) | tr '\n' ' ')
    echo "extra: $extra"
    [ -z "$extra" ]
}
