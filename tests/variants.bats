#!/usr/bin/env bats
# variants: glibc musl
# One contract, two C libraries: the library of this variant ($LIB) carries what the apmint
# reader looks for in the ELF file, its dynamic linker puts the TLS pointers in static TLS (the
# TLSDESC argument word is the offset from the thread pointer, checked against the addresses
# the threads themselves see), and a program of this libc is fully visible from outside.
# modules: preload/start/libc_check.c preload/context/thread_records.c hooks/pthread_create.c
# modules: preload/start/fork_sequence.c preload/api/context_api.c preload/start/runtime.c
load helpers
load elf_contract
bats_require_minimum_version 1.5.0

setup() { setup_sockdir; }
teardown() { stop_target; rm -rf "$SOCKDIR"; }

case $ARCH in
    x86_64) TLSDESC=R_X86_64_TLSDESC ;;
    aarch64) TLSDESC=R_AARCH64_TLSDESC ;;
esac

@test "ELF: R_*_TLSDESC relocations name both TLS pointers, and nothing relaxes them" {
    elf_tlsdesc "$LIB" "$TLSDESC"
}

@test "ELF: the storage symbol is an 8-byte object and the TLS pointers are 8-byte TLS, all exported" {
    elf_symbols "$LIB"
}

@test "ELF: file name, SONAME, C library and load-time binding match the variant" {
    elf_identity "$LIB" "$LIBC"
}

@test "ELF: hardened: full RELRO, non-executable stack, stack protector, fortified calls, never unloaded" {
    run readelf -lW "$LIB"
    [ "$status" -eq 0 ]
    echo "$output" | grep -E '^ +GNU_RELRO '
    echo "$output" | grep -E '^ +GNU_STACK .* RW +0x'   # RW, not RWE
    run readelf -dW "$LIB"
    echo "$output" | grep -E '\(FLAGS\) .*BIND_NOW'     # with GNU_RELRO: full RELRO
    echo "$output" | grep -E '\(FLAGS_1\) .*NODELETE'   # dlclose never unmaps it
    undef=$(nm -D --undefined-only "$LIB")
    echo "$undef" | grep -E ' __stack_chk_fail(@|$)'
    if [ "$LIBC" = glibc ]; then # musl's headers do not fortify
        echo "$undef" | grep -E ' __(snprintf|vsnprintf|memcpy)_chk(@|$)'
    fi
}

# Every libc name the library imports is bound at load in every process (-z now): the list is
# kept in tests/library_imports.txt, so that a new one is a decision and not a side effect.
@test "the library imports exactly the libc names of tests/library_imports.txt" {
    readelf -h "$LIB" | grep -q 'Machine: *Advanced Micro Devices X86-64' ||
        skip "the list is of the x86_64 libraries"
    run nm -D --undefined-only "$LIB"
    [ "$status" -eq 0 ]
    got=$(awk -v libc="$LIBC" '{sub(/@.*/, "", $2); print libc, $2}' <<<"$output" | sort)
    want=$(grep -v '^#' "$ROOT/tests/library_imports.txt" | grep "^$LIBC " | sort)
    diff <(echo "$want") <(echo "$got")
}

@test "the loader maps the library with two segments, never writable and executable (each mapping costs every start: docs/speed.md)" {
    run readelf -lW "$LIB"
    [ "$status" -eq 0 ]
    loads=$(grep -E '^ +LOAD ' <<<"$output")
    echo "$loads"
    [ "$(wc -l <<<"$loads")" -eq 2 ]
    refute grep -E ' RWE ' <<<"$loads"
    # what the dynamic loader does with it: one mapping for the whole, one for the writable
    # segment, one for the zero-filled data (the linker's defaults: five)
    command -v strace >/dev/null || skip "strace is not installed"
    local lib
    lib=$(readlink -f "$LIB")
    LD_PRELOAD=$lib ELASTIC_OTEL_UNIVERSAL_PROFILING_INTEGRATION_ENABLED=false \
        strace -e trace=openat,mmap,close -o "$BATS_TEST_TMPDIR/strace.txt" /bin/true
    maps=$(sed -n "\|openat(.*\"$lib\"|,/^close(/p" "$BATS_TEST_TMPDIR/strace.txt" | grep -c '^mmap(')
    echo "mmap calls while loading: $maps"
    [ "$maps" -eq 3 ]
}

@test "ELF: the tracer API and nothing internal is exported" {
    elf_exports "$LIB"
}

@test "ELF: every undefined symbol is defined by glibc and by musl (it may land in either)" {
    # an inherited LD_PRELOAD puts either library in front of programs of the other libc: it
    # must load there (and stay inactive), so nothing it needs may be one libc's own
    elf_resolvable "$LIB" /lib/"$(gcc -dumpmachine)"/libc.so.6 /lib64/ld-linux-x86-64.so.2
    command -v musl-gcc >/dev/null || skip "musl-gcc is not installed"
    elf_resolvable "$LIB" /usr/lib/"$(uname -m)"-linux-musl/libc.so
}

# tls_truth PID FILE: for every "tls TID TP ADDR VALUE" line of target_tlsaddr in FILE, checks that
# the TLSDESC argument word read from /proc/PID/mem (load bias + r_offset + 8) added to the
# thread pointer is the address the thread itself sees, and that the pointer stored there is
# the one the thread sees. Prints the word.
tls_truth() {
    "$PY" - "$1" "$2" "$LIB" "$TLSDESC" <<'EOF'
import struct, sys
pid, lines, lib, want = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
rtype = {'R_X86_64_TLSDESC': 36, 'R_AARCH64_TLSDESC': 1031}[want]
d = open(lib, 'rb').read()
shoff, = struct.unpack_from('<Q', d, 0x28)
shentsize, shnum = struct.unpack_from('<HH', d, 0x3a)
secs = [struct.unpack_from('<IIQQQQIIQQ', d, shoff + i * shentsize) for i in range(shnum)]
r_offset = None
for s in secs:
    if s[1] != 4:  # SHT_RELA
        continue
    sym, strs = secs[s[6]], secs[secs[s[6]][6]]
    for o in range(s[4], s[4] + s[5], 24):
        off, info, _ = struct.unpack_from('<QQq', d, o)
        if info & 0xffffffff != rtype:
            continue
        st_name, = struct.unpack_from('<I', d, sym[4] + (info >> 32) * 24)
        start = strs[4] + st_name
        if d[start:d.index(b'\0', start)] == b'elastic_apm_profiling_correlation_tls_v1':
            r_offset = off
assert r_offset is not None, 'no TLSDESC relocation names the variable'
bias = None
for line in open(f'/proc/{pid}/maps'):
    f = line.split()
    if len(f) >= 6 and f[5] == lib and int(f[2], 16) == 0:
        bias = int(f[0].split('-')[0], 16)  # first PT_LOAD of a shared object is at vaddr 0
        break
assert bias is not None, f'{lib} is not mapped in {pid}'
mem = open(f'/proc/{pid}/mem', 'rb')
def word(addr):
    mem.seek(addr)
    return struct.unpack('<Q', mem.read(8))[0]
w = word(bias + r_offset + 8)
print(f'word {w - (1 << 64) if w >> 63 else w}')
n = 0
for line in open(lines):
    f = line.split()
    if not f or f[0] != 'tls':
        continue
    tid, tp, addr, value = int(f[1]), int(f[2], 16), int(f[3], 16), int(f[4], 16)
    calc = (tp + w) & (2**64 - 1)
    assert calc == addr, f'tid {tid}: tp {tp:#x} + word = {calc:#x}, but the thread sees {addr:#x}'
    assert word(calc) == value, f'tid {tid}: read {word(calc):#x}, the thread has {value:#x}'
    assert value != 0, f'tid {tid} has no record'
    n += 1
print(f'threads {n}')
EOF
}

@test "static TLS: thread pointer + TLSDESC word is each thread's own copy (checked from inside)" {
    LD_PRELOAD=$LIB "$HELPERS/target_tlsaddr" 3 10 >"$BATS_TEST_TMPDIR/tls.out" &
    TARGET_PID=$!
    wait_for_line "$BATS_TEST_TMPDIR/tls.out" '^ready'
    run tls_truth "$TARGET_PID" "$BATS_TEST_TMPDIR/tls.out"
    echo "$output"
    [ "$status" -eq 0 ]
    [ "${lines[1]}" = "threads 4" ]
    word=${lines[0]#word }
    # static TLS lies below the thread pointer on x86_64 (variant II), above it on aarch64 (I)
    case $ARCH in
        x86_64) [ "$word" -lt 0 ] ;;
        aarch64) [ "$word" -gt 0 ] ;;
    esac
    # the outside reader derives the same offset and the same per-thread thread pointers
    inspect_json "$TARGET_PID"
    [ "$(jget 'j["tls_offset"]')" = "$word" ]
    while read -r _ tid tp _; do
        [ "$(jget "[int(t['thread_pointer'], 16) for t in j['threads'] if t['tid'] == $tid][0]")" = "$((tp))" ]
    done < <(grep '^tls ' "$BATS_TEST_TMPDIR/tls.out")
}

@test "a program of this libc under \$LIB is attachable and every thread of it has a record" {
    interp=$(readelf -lW "$HELPERS/target_threads" | sed -n 's/.*Requesting program interpreter: \(.*\)]/\1/p')
    if [ "$VARIANT" = musl ]; then [[ "$interp" == *musl* ]]; else [[ "$interp" == *ld-linux* ]]; fi
    start_target "$HELPERS/target_threads" 4 10
    wait_for_line "$BATS_TEST_TMPDIR/target.out" '^ready'
    inspect_json "$TARGET_PID"
    [ "$(jget 'j["attachable"]')" = true ]
    [ "$(jget 'j["library"]["path"]')" = "$LIB" ]
    [ "$(jget 'j["storage"]["service_name"]')" = unknown_service:target_threads ]
    [[ "$(jget 'j["storage"]["socket_path"]')" == "$SOCKDIR"/proflink-"$TARGET_PID"-*.sock ]]
    # main + 4 workers; proflink's own threads are the only ones without a record
    [ "$(jget 'sum(1 for t in j["threads"] if t["comm"] not in ("proflink-reader", "proflink-intake"))')" = 5 ]
    [ "$(jget 'sum(1 for t in j["threads"] if t["comm"] not in ("proflink-reader", "proflink-intake") and t["apm"] and t["apm"]["valid"] == 1 and t["apm"]["minor"] == 1)')" = 5 ]
    [ "$(jget 'all(t["apm"] is None for t in j["threads"] if t["comm"] in ("proflink-reader", "proflink-intake"))')" = true ]
    [ "$(jget 'j["otel_process_context"]["found"]')" = true ]
}

@test "a traced program of this libc: context set and cleared through the API is seen from outside" {
    trace=0af7651916cd43dd8448eb211c80319c span=b7ad6b7169203331 txn=00f067aa0ba902b7
    start_target "$HELPERS/api_switch" "00-$trace-$span-01" "$txn" 2
    wait_for_line "$BATS_TEST_TMPDIR/target.out" '^ready'
    grep -x "get 1 $trace $txn 01" "$BATS_TEST_TMPDIR/target.out"
    inspect_json "$TARGET_PID"
    [ "$(jget "sum(1 for t in j['threads'] if t['apm'] and t['apm']['trace_present'] == 1 and t['apm']['trace_id'] == '$trace' and t['apm']['span_id'] == '$span' and t['apm']['transaction_id'] == '$txn')")" = 2 ]
    [ "$(jget "sum(1 for t in j['threads'] if t['otel'] and t['otel']['valid'] == 1 and t['otel']['attributes']['local_root_span_id'] == '$txn')")" = 2 ]
    wait_for_line "$BATS_TEST_TMPDIR/target.out" '^cleared'
    inspect_json "$TARGET_PID"
    [ "$(jget "[t['apm']['trace_present'] for t in j['threads'] if t['tid'] == $TARGET_PID][0]")" = 0 ]
    # cleared: the record stays in place, hidden by its valid byte (OTEP 4947: one method)
    [ "$(jget "[t['otel']['valid'] for t in j['threads'] if t['tid'] == $TARGET_PID][0]")" = 0 ]
}

@test "fork: the child of a program of this libc publishes its own socket and records" {
    start_target "$HELPERS/target_fork" 10
    wait_for_line "$BATS_TEST_TMPDIR/target.out" '^child '
    child=$(sed -n 's/^child //p' "$BATS_TEST_TMPDIR/target.out")
    wait_attachable "$child"
    inspect_json "$child"
    [ "$(jget 'j["attachable"]')" = true ]
    csock=$(jget 'j["storage"]["socket_path"]')
    [[ "$csock" == "$SOCKDIR"/proflink-"$child"-*.sock ]]
    [ -S "$csock" ]
    # the child's main thread and the thread it started both have records
    [ "$(jget 'sum(1 for t in j["threads"] if t["comm"] not in ("proflink-reader", "proflink-intake") and t["apm"] and t["apm"]["valid"] == 1)')" = 2 ]
    inspect_json "$TARGET_PID" --no-threads
    psock=$(jget 'j["storage"]["socket_path"]')
    [[ "$psock" == "$SOCKDIR"/proflink-"$TARGET_PID"-*.sock ]]
    [ -S "$psock" ]
}

@test "disabled: a program of this libc runs with nothing published" {
    ELASTIC_OTEL_UNIVERSAL_PROFILING_INTEGRATION_ENABLED=false LD_PRELOAD=$LIB \
        "$HELPERS/target_threads" 2 10 >"$BATS_TEST_TMPDIR/target.out" &
    TARGET_PID=$!
    wait_for_line "$BATS_TEST_TMPDIR/target.out" '^ready'
    grep -q "$LIB" "/proc/$TARGET_PID/maps" # loaded, but inert
    run "$INSPECT" --json "$TARGET_PID"
    [ "$status" -eq 1 ]
    echo "$output" >"$BATS_TEST_TMPDIR/inspect.json"
    [ "$(jget 'j["attachable"]')" = false ]
    [ "$(jget 'j["threads"]')" = null ] || [ "$(jget 'sum(1 for t in j["threads"] if t["apm"])')" = 0 ]
    [ -z "$(ls -A "$SOCKDIR")" ]
    refute grep -q OTEL_CTX "/proc/$TARGET_PID/maps"
}

@test "a program of the other C library under \$LIB runs unchanged: one warning, nothing published" {
    command -v musl-gcc >/dev/null || skip "musl-gcc is not installed"
    local other_cc=musl-gcc
    if [ "$LIBC" = musl ]; then other_cc=gcc; fi
    # threads (the pthread_create interposer), fork (atfork registration), stdout and a status
    cat >"$BATS_TEST_TMPDIR/other.c" <<'CEOF'
#include <pthread.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>
static void *run(void *a) { printf("thread %s\n", (char *)a); return NULL; }
int main(void)
{
    pthread_t t;
    if (pthread_create(&t, NULL, run, "one") || pthread_join(t, NULL))
        return 10;
    fflush(stdout);
    pid_t p = fork();
    if (p == 0) { printf("child\n"); return 4; }
    int st;
    waitpid(p, &st, 0);
    printf("child status %d\n", WEXITSTATUS(st));
    return 3;
}
CEOF
    $other_cc -O1 -pthread -o "$BATS_TEST_TMPDIR/other" "$BATS_TEST_TMPDIR/other.c"
    run --separate-stderr "$BATS_TEST_TMPDIR/other"
    [ "$status" -eq 3 ]
    want=$output
    run --separate-stderr env LD_PRELOAD="$LIB" PROFLINK_LOG=debug "$BATS_TEST_TMPDIR/other"
    # shellcheck disable=SC2154 # stderr: set by run --separate-stderr
    echo "status $status; stdout: $output; stderr: $stderr"
    [ "$status" -eq 3 ]
    [ "$output" = "$want" ]
    [ "$(grep -c 'proflink:' <<<"$stderr")" = 1 ]
    grep -q 'inactive in this process' <<<"$stderr"
    [ -z "$(ls -A "$SOCKDIR")" ]
    # a host that asked for silence gets it
    for level in off ERROR; do
        run --separate-stderr env LD_PRELOAD="$LIB" PROFLINK_LOG=$level "$BATS_TEST_TMPDIR/other"
        [ "$status" -eq 3 ]
        [ "$output" = "$want" ]
        [ -z "$stderr" ]
    done
}

@test "dlclose after a late dlopen: a thread that used the API exits, the reader keeps running, no crash" {
    # musl refuses a late dlopen of a library with static TLS, and its dlclose unmaps nothing
    [ "$LIBC" = glibc ] || skip "musl: no late dlopen of static-TLS libraries, no unloading"
    run "$HELPERS/target_dlclose" "$LIB"
    echo "status $status: $output"
    [ "$status" -eq 0 ]
    [ "$output" = survived ]
}
