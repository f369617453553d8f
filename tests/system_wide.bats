#!/usr/bin/env bats
# System-wide use: the glibc library listed in /etc/ld.so.preload. Every program must start and
# behave exactly as without it, and PROFLINK_INCLUDE / PROFLINK_EXCLUDE must leave unselected
# programs with nothing created. The host's /etc is never touched: each run happens in a private
# mount namespace (unshare -m) whose /etc is an overlay (or a copy) holding the ld.so.preload.
load helpers
bats_require_minimum_version 1.5.0

setup_file() {
    local d=$BATS_FILE_TMPDIR
    # ns_run LIB CMD ARGS...: CMD in a mount namespace where /etc/ld.so.preload lists LIB
    cat >"$d/ns_run.sh" <<'EOF'
#!/bin/sh
lib=$1
shift
m=$(mktemp -d "${NS_TMP:-/tmp}/plns.XXXXXX") || exit 90
mount -t tmpfs tmpfs "$m" || exit 91
mkdir "$m/up" "$m/work" "$m/etc"
if ! mount -t overlay overlay -o "lowerdir=/etc,upperdir=$m/up,workdir=$m/work" /etc 2>/dev/null; then
    cp -a /etc/. "$m/etc/" && mount --bind "$m/etc" /etc || exit 92
fi
printf '%s\n' "$lib" >/etc/ld.so.preload || exit 93
exec "$@"
EOF
    chmod +x "$d/ns_run.sh"
    export NS_TMP=$d
    # the library where a system-wide install has it, loadable by every user (setpriv runs a
    # program as nobody; the checkout may be in root's home, mode 700)
    SYSDIR=$(mktemp -d /tmp/plsw.XXXXXX)
    chmod 755 "$SYSDIR"
    copy_for_all "$SYSDIR" "$LIB"
    export SYSDIR SYSLIB=$COPY
    if ! unshare -m --propagation private "$d/ns_run.sh" /nonexistent.so true 2>"$d/ns.err"; then
        echo "skip: cannot make a private mount namespace here ($(head -c 200 "$d/ns.err"))" >"$d/skip"
    fi
    # the corpus' inputs
    mkdir -p "$d/files/dir"
    for f in zeta alpha 'with space' Mid; do echo "$f" >"$d/files/dir/$f"; done
    seq 2000 | sed 's/$/ line/' | sort -R --random-source=/dev/zero >"$d/files/lines"
    cp "$ROOT/tests/fixtures/hello.c" "$d/files/hello.c"
    printf 'all: out.txt\n\t@cat out.txt\nout.txt:\n\t@echo made-by-make >$@\n' >"$d/files/Makefile"
    # built by make (tests/fixtures.mk) where musl-gcc and a static libc are installed
    local p
    for p in hello_musl hello_static; do
        if [ -x "$ROOT/build/tests/fixtures/$p" ]; then cp "$ROOT/build/tests/fixtures/$p" "$d/files/"; fi
    done
}

teardown_file() { rm -rf "$SYSDIR"; }

setup() {
    [ ! -f "$BATS_FILE_TMPDIR/skip" ] || skip "$(cut -d: -f2- "$BATS_FILE_TMPDIR/skip")"
    setup_sockdir
    export NS_TMP=$BATS_FILE_TMPDIR
}

teardown() {
    local p
    for p in ${KILL_PIDS:-}; do kill "$p" 2>/dev/null || true; done
    for p in ${KILL_PIDS:-}; do wait "$p" 2>/dev/null || true; done
    rm -rf "$SOCKDIR"
}

ns() { unshare -m --propagation private "$BATS_FILE_TMPDIR/ns_run.sh" "$SYSLIB" "$@"; }

# same CMDLINE: runs the shell command line in a fresh work dir without, then with the library
# in /etc/ld.so.preload; stdout and exit status must be equal, stderr free of loader or proflink
# messages. Prints both runs on failure.
same() {
    local w=$BATS_TEST_TMPDIR/w plain_st=0 pre_st=0
    rm -rf "$w.plain" "$w.pre"
    cp -a "$BATS_FILE_TMPDIR/files" "$w.plain"
    cp -a "$BATS_FILE_TMPDIR/files" "$w.pre"
    (cd "$w.plain" && sh -c "$1") >"$w.plain.out" 2>"$w.plain.err" || plain_st=$?
    (cd "$w.pre" && ns sh -c "$1") >"$w.pre.out" 2>"$w.pre.err" || pre_st=$?
    if [ "$plain_st" != "$pre_st" ] || ! cmp -s "$w.plain.out" "$w.pre.out" ||
        grep -E 'proflink|ld\.so|Error relocating' "$w.pre.err"; then
        echo "command: $1"
        echo "without: status $plain_st"; cat "$w.plain.out" "$w.plain.err"
        echo "with /etc/ld.so.preload: status $pre_st"; cat "$w.pre.out" "$w.pre.err"
        return 1
    fi
    [ -s "$w.plain.out" ] # the command did something worth comparing
}

@test "the namespace really preloads the library into every dynamically linked glibc program" {
    run ns sh -c 'grep -c "elastic-jvmti-linux-proflink" /proc/$$/maps; cat /etc/ld.so.preload'
    [ "$status" -eq 0 ]
    [ "${lines[0]}" -ge 1 ]
    [ "${lines[1]}" = "$SYSLIB" ]
    if [ -s /etc/ld.so.preload ]; then refute grep -qF "$SYSLIB" /etc/ld.so.preload; fi # the host is untouched
}

@test "coreutils: ls, cat, sort, sha256sum, wc behave the same" {
    same 'ls -1 dir; ls -la dir | wc -l'
    same 'cat dir/alpha dir/zeta; cat no-such-file'
    same 'sort -n lines | head -3; sort -u lines | tail -1; sort -c lines'
    same 'sha256sum lines dir/*'
    same 'cat lines | sort | uniq -c | sort -rn | head -2; wc -l lines'
}

# shellcheck disable=SC2016 # expanded by the shell under test
@test "bash and sh: pipelines, subshells, background jobs and exit statuses" {
    same 'bash -c "echo \$((6*7)); (exit 5); echo \$?; for i in 1 2 3; do (echo job \$i) & wait; done; exit 9"'
    same 'bash -c "set -o pipefail; false | true; echo \$?"; echo "sh \$(echo nested)"'
    same 'bash -c "trap \"echo trapped\" EXIT; kill -TERM \$\$; sleep 1"; echo status $?'
}

@test "python3: threads, subprocess, json" {
    command -v python3 >/dev/null || skip "python3 is not installed"
    same 'python3 -c "
import json, subprocess, threading, sys
out = []
ts = [threading.Thread(target=out.append, args=(i,)) for i in range(8)]
[t.start() for t in ts]; [t.join() for t in ts]
print(json.dumps(sorted(out)))
print(subprocess.run([\"sort\", \"-n\", \"lines\"], capture_output=True, text=True).stdout.splitlines()[-1])
sys.exit(4)"'
}

@test "git: --version, init, commit, log in a temporary directory" {
    command -v git >/dev/null || skip "git is not installed"
    same 'git --version'
    # shellcheck disable=SC2016 # expanded by the shell under test
    same 'export GIT_AUTHOR_DATE="2020-01-01T00:00:00Z" GIT_COMMITTER_DATE="2020-01-01T00:00:00Z" HOME=$PWD
          git init -q repo && cd repo && cp ../lines . && git add lines &&
          git -c user.name=t -c user.email=t@example.com commit -q -m first &&
          git log --format="%H %s" && git status --short | wc -l'
}

@test "make and gcc: make -v, a tiny Makefile, compiling and running hello.c" {
    same 'make -v | head -1'
    same 'make; make; echo status $?'
    same 'gcc -O1 -o hello hello.c && ./hello; echo status $?'
}

# The kernel refuses unshare(CLONE_NEWUSER) and setns() into a mount namespace to a process with
# more than one thread, and capabilities and PR_SET_KEEPCAPS are per thread: an extra thread
# started before main() (or one whose credentials differ) breaks container runtimes, sandboxes
# and privilege-dropping tools. A program that consumes no profiler message must stay as
# single-threaded as it was.
@test "programs that need to be single-threaded: unshare -U/-r, nsenter -m, setpriv" {
    unshare -U true 2>/dev/null || skip "user namespaces are not available here"
    same 'unshare -U sh -c "echo in a user namespace"; echo status $?'
    same 'unshare -r id -u; echo status $?'
    same 'nsenter -t $$ -m echo entered; echo status $?'
    # (as another user the test's private socket dir is not writable: that warning is right,
    # and not what this test is about, so the default dir is used)
    same 'env -u ELASTIC_OTEL_UNIVERSAL_PROFILING_INTEGRATION_SOCKET_DIR setpriv --reuid=65534 --regid=65534 --clear-groups id -u; echo status $?'
}

@test "musl programs ignore /etc/ld.so.preload and run the same" {
    if [ ! -x "$BATS_FILE_TMPDIR/files/hello_musl" ]; then
        skip "no musl program: musl-gcc is not installed"
    fi
    same './hello_musl; echo status $?'
}

@test "static programs ignore /etc/ld.so.preload and run the same" {
    if [ ! -x "$BATS_FILE_TMPDIR/files/hello_static" ]; then
        skip "no static program: the C library has no static archive (libc.a) here"
    fi
    same './hello_static; echo status $?'
}

# start_pair ENV...: in the namespace, starts "sleep" and "tail -f /dev/null" under a shell
# with ENV; sets SLEEP_PID, TAIL_PID and SH_PID and waits until both run.
start_pair() {
    local out=$BATS_TEST_TMPDIR/pair.out
    env "$@" unshare -m --propagation private "$BATS_FILE_TMPDIR/ns_run.sh" "$SYSLIB" \
        sh -c 'sleep 20 & echo "sleep $!"; tail -f /dev/null & echo "tail $!"; wait' >"$out" 2>&1 &
    SH_PID=$!
    KILL_PIDS="$SH_PID"
    wait_for_line "$out" '^tail '
    SLEEP_PID=$(sed -n 's/^sleep //p' "$out")
    TAIL_PID=$(sed -n 's/^tail //p' "$out")
    KILL_PIDS="$SLEEP_PID $TAIL_PID $SH_PID"
    for _ in $(seq 100); do
        grep -q elastic-jvmti-linux "/proc/$SLEEP_PID/maps" 2>/dev/null &&
            grep -q elastic-jvmti-linux "/proc/$TAIL_PID/maps" 2>/dev/null && return 0
        sleep 0.05
    done
    return 1
}

# published PID: the process has a socket file, storage and an OTel context
published() {
    wait_attachable "$1"
    compgen -G "$SOCKDIR/proflink-$1-*" >/dev/null
    grep -q OTEL_CTX "/proc/$1/maps"
}

# inert PID: the library is loaded, but nothing was created and every pointer is NULL
inert() {
    grep -q elastic-jvmti-linux "/proc/$1/maps"
    refute compgen -G "$SOCKDIR/proflink-$1-*"
    refute grep -q OTEL_CTX "/proc/$1/maps"
    [ "$(find "/proc/$1/task" -mindepth 1 -maxdepth 1 | wc -l)" -eq 1 ] # no thread of proflink's
    run "$INSPECT" --json "$1"
    [ "$status" -eq 1 ]
    echo "$output" >"$BATS_TEST_TMPDIR/inspect.json"
    [ "$(jget 'j["attachable"]')" = false ]
    [ "$(jget 'j["storage"]')" = null ] # the storage pointer is NULL
    [ "$(jget 'j["threads"] is None or all(t["apm"] is None and t["otel"] is None for t in j["threads"])')" = true ]
}

@test "PROFLINK_INCLUDE: only the matching program publishes, the others create nothing" {
    start_pair PROFLINK_INCLUDE='*/sleep,/nonexistent/*'
    published "$SLEEP_PID"
    inert "$TAIL_PID"
    inert "$SH_PID"
    [ "$(find "$SOCKDIR" -mindepth 1 -maxdepth 1 | wc -l)" -eq 1 ]
}

@test "PROFLINK_EXCLUDE: the matching program creates nothing, the others publish" {
    start_pair PROFLINK_EXCLUDE='*/tail'
    published "$SLEEP_PID"
    published "$SH_PID"
    inert "$TAIL_PID"
}

@test "without a selection every program of the system publishes (the default)" {
    start_pair
    published "$SLEEP_PID"
    published "$TAIL_PID"
    published "$SH_PID"
}

@test "a setuid program never activates, whatever its environment says" {
    command -v setpriv >/dev/null || skip "setpriv (util-linux) is not installed"
    d=$(mktemp -d /tmp/plsuid.XXXXXX)
    chmod 0755 "$d"
    cp "$HELPERS/target_threads" "$d/suid"
    chown root:root "$d/suid"
    chmod 4755 "$d/suid"
    # 5 s: time enough under load for the checks below while it runs
    ns setpriv --reuid=65534 --regid=65534 --clear-groups "$d/suid" 2 5 >"$d/out" 2>"$d/err" &
    KILL_PIDS=$!
    for _ in $(seq 50); do grep -q ready "$d/out" 2>/dev/null && break; sleep 0.05; done
    pid=$(pgrep -n -f "^$d/suid")
    grep -q elastic-jvmti-linux-proflink "/proc/$pid/maps" # loaded through /etc/ld.so.preload
    refute ls /tmp/proflink-"$pid"-*.sock 2>/dev/null            # but created nothing
    refute grep -q OTEL_CTX "/proc/$pid/maps"
    refute grep -qxE 'proflink-(reader|intake)' /proc/"$pid"/task/*/comm
    wait "$KILL_PIDS"
    grep -q 'done' "$d/out"
    rm -rf "$d"
}
