# inspect_helpers.bash — for the proflink-inspect suites (tests/inspect_*.bats): it must reach
# the same verdict as the eBPF profiler's apmint integration. They check it against processes it
# must reject (no library, stand-in agents built or configured wrong, broken storage and
# sockets), against a stand-in built right (its ELF findings cross-checked with readelf), and
# against the real library.
#
# The stand-in agent ("fake", tests/fixtures/fake_agent.c, built by make in several variants)
# publishes storage, a socket and thread records from its constructor as told by FAKE_*
# variables, then touches FAKE_READY. Variables set here are read by the suites that load it.
# shellcheck disable=SC2034
load helpers

REAL_LIB=$ROOT/build/elastic-jvmti-linux-proflink-$(uname -m).so

case "$(uname -m)" in
x86_64) TLSDESC=R_X86_64_TLSDESC ;;
aarch64) TLSDESC=R_AARCH64_TLSDESC ;;
esac

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

# ins_json PID [options] — proflink-inspect --json; output in $BATS_TEST_TMPDIR/inspect.json
# (read with jget), stderr in ins.err, exit status in INS_STATUS. The output must always be valid JSON.
ins_json() {
    local pid=$1
    shift
    INS_STATUS=0
    "$INSPECT" --json "$@" "$pid" >"$BATS_TEST_TMPDIR/inspect.json" 2>"$BATS_TEST_TMPDIR/ins.err" ||
        INS_STATUS=$?
    json_eval_start
    jget 1 >/dev/null # it is JSON
}

# ins_check NAME — "status detail" of check NAME in the last ins_json output.
ins_check() {
    jget "next(c['status'] + ' ' + c['detail'] for c in j['checks'] if c['name'] == '$1')"
}
