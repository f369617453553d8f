#!/usr/bin/env bats
# proflink-inspect's ELF and TLS checks (mapping, elf, tls): stand-in agents built the ways the
# profiler rejects (file name, TLS dialect and model, hidden symbol, symbol size, no section
# headers, dynamic TLS after a late dlopen), and one built right, cross-checked with readelf.
# Shared helpers (ins_*, the stand-in agents): tests/inspect_helpers.bash.
# shellcheck shell=bash
load inspect_helpers

@test "fake agent: symbol, relocation and load bias agree with readelf and the maps" {
    need_fakes
    command -v readelf >/dev/null || skip "needs readelf"
    local so=$FAKES/good/elastic-jvmti-linux-fake.so
    ins_fake good
    ins_json "$INS_PID" --no-threads
    local off sym
    off=$(readelf -rW "$so" | awk -v t="$TLSDESC" '$3 == t && $5 == "elastic_apm_profiling_correlation_tls_v1" { print $1 }')
    sym=$(readelf -sW --dyn-syms "$so" | awk '$8 == "elastic_apm_profiling_correlation_process_storage_v1" { print $2; exit }')
    [ -n "$off" ]
    [ -n "$sym" ]
    [ "$(jget 'int(j["library"]["tlsdesc_offset"], 16)')" = "$((16#$off))" ]
    [ "$(jget 'int(j["library"]["storage_symbol"], 16)')" = "$((16#$sym))" ]
    # the load bias is where the file's first page is mapped (first PT_LOAD at vaddr 0)
    local first
    first=$(awk -v p="$so" '$6 == p && $3 == "00000000" { split($1, a, "-"); print a[1]; exit }' "/proc/$INS_PID/maps")
    [ "$(jget 'int(j["library"]["load_bias"], 16)')" = "$((16#$first))" ]
    # and the storage pointer read through it is where the storage really is
    [ "$(jget 'int(j["storage"]["address"], 16) != 0')" = true ]
}

@test "a library with only DT_HASH (no DT_GNU_HASH) is found through DT_HASH" {
    need_fakes
    ins_fake sysv
    ins_json "$INS_PID" --no-threads
    [ "$INS_STATUS" -eq 0 ]
    [[ "$(ins_check elf)" == "pass "*"(via DT_HASH)"* ]]
}

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
    [ "$(jget 'j["tls_offset"]')" = null ]
}
