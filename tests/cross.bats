#!/usr/bin/env bats
# variants: aarch64-glibc aarch64-musl
# The aarch64 build (make cross), checked on this x86_64 machine: the library files against the
# reader's contract as for x86_64 (tests/elf_contract.bash), then programs of each C library run
# under qemu-user with the library preloaded, where tests/helpers/api_profiler_view.c does from
# inside what the profiler does from outside (tpidr_el0 + the TLSDESC argument word found through
# the relocation in the file). ptrace and eBPF readers need real Arm hardware
# (docs/architectures.md).
load helpers
load elf_contract

TRAD_LIB=$ROOT/build/aarch64-trad/elastic-jvmti-linux-proflink-aarch64.so

setup() { setup_sockdir; }
teardown() { rm -rf "$SOCKDIR"; }

@test "aarch64 ELF: R_AARCH64_TLSDESC (1031) relocations name both TLS pointers, nothing relaxes them" {
    elf_tlsdesc "$LIB" R_AARCH64_TLSDESC
    readelf -hW "$LIB" | grep -E 'Machine: +AArch64'
}

@test "aarch64 ELF: the 8-byte storage symbol and the TLS pointers, exported; the API and nothing else" {
    elf_symbols "$LIB"
    elf_exports "$LIB"
}

@test "aarch64 ELF: file name, SONAME, C library and load-time binding match the variant" {
    elf_identity "$LIB" "$LIBC"
}

@test "aarch64 ELF: every undefined symbol is defined by the target's C library" {
    if [ "$LIBC" = musl ]; then
        elf_resolvable "$LIB" /usr/lib/aarch64-linux-musl/libc.so
    else
        elf_resolvable "$LIB" /usr/aarch64-linux-gnu/lib/libc.so.6 \
            /usr/aarch64-linux-gnu/lib/ld-linux-aarch64.so.1
    fi
}

@test "aarch64 under qemu: every thread's records found the profiler's way hold the API's context" {
    run env LD_PRELOAD="$LIB" "$EMULATOR" "$HELPERS/api_profiler_view" 4
    echo "$output"
    [ "$status" -eq 0 ]
    # static TLS lies above the thread pointer on aarch64 (TLS variant I): positive words
    [[ "${lines[0]}" =~ ^word\ apm\ ([0-9]+)\ otel\ ([0-9]+)$ ]]
    [ "${BASH_REMATCH[1]}" -gt 0 ]
    [ "${BASH_REMATCH[2]}" -gt 0 ]
    [ "$(grep -c '^thread [0-9]* ok$' <<<"$output")" -eq 5 ]
    grep -E "^storage ok unknown_service:api_profiler_view $SOCKDIR/proflink-[0-9]+-[0-9a-f]{8}\.sock$" <<<"$output"
}

@test "aarch64 under qemu: the OTel process context decodes with the independent reader" {
    run env LD_PRELOAD="$LIB" OTEL_SERVICE_NAME=arm-svc "$EMULATOR" "$HELPERS/api_profiler_view" 1
    [ "$status" -eq 0 ]
    hex=$(sed -n 's/^otel_ctx ok [0-9]* //p' <<<"$output")
    [ -n "$hex" ]
    "$PY" - "$ROOT/tests" "$hex" <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
import otel_ctx_reader as r
resource, attributes, dups = r.process_context(bytes.fromhex(sys.argv[2]))
assert resource["service.name"] == "arm-svc", resource
assert resource["telemetry.sdk.name"] == "proflink", resource
assert not dups, dups
PY
}

@test "a library built with the traditional TLS dialect fails the contract" {
    [ "$LIBC" = glibc ] || skip "one wrong build is enough (the glibc one)"
    [ -f "$TRAD_LIB" ] || skip "make cross builds it"
    run elf_tlsdesc "$TRAD_LIB" R_AARCH64_TLSDESC
    [ "$status" -ne 0 ]
    run env LD_PRELOAD="$TRAD_LIB" "$EMULATOR" "$HELPERS/api_profiler_view" 1
    [ "$status" -ne 0 ]
    [[ "$output" == *"no TLSDESC relocation names both TLS pointers"* ]]
}
