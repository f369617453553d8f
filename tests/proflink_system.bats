#!/usr/bin/env bats
# scripts/proflink-system enable|disable|status on /etc/ld.so.preload. Each run happens in a
# private mount namespace whose /etc is an overlay (or a copy), so the host's /etc is never
# touched; inside it the script edits the real path, as it would on a host.
# shellcheck shell=bash
# the scripts run in the namespace expand their own variables
# shellcheck disable=SC2016
load helpers
load ns_etc
bats_require_minimum_version 1.5.0

SYS=$ROOT/scripts/proflink-system

setup_file() { ns_etc_setup; }

setup() {
    [ ! -f "$BATS_FILE_TMPDIR/skip" ] || skip "$(cut -d: -f2- "$BATS_FILE_TMPDIR/skip")"
    export NS_TMP=$BATS_FILE_TMPDIR SYS LIB
}

ns() { ns_etc "$@"; }

@test "proflink-system: enable, status, disable leaves /etc/ld.so.preload byte-identical" {
    # another entry (harmless to preload), a comment, and no newline at the end
    other=$(gcc -print-file-name=libm.so.6)
    other=$(readlink -f "$other")
    [ -f "$other" ]
    export OTHER=$other
    run ns sh -ec '
        printf "%s\n# kept as is\n  %s" "$OTHER" "$OTHER" >/etc/ld.so.preload
        chmod 640 /etc/ld.so.preload
        cp -p /etc/ld.so.preload /tmp/plt_before.$$
        "$SYS" enable --all "$LIB"
        echo "listed: $(grep -c elastic-jvmti-linux-proflink /etc/ld.so.preload)"
        echo "others: $(grep -c "$OTHER" /etc/ld.so.preload)"
        echo "maps: $(grep -c elastic-jvmti-linux-proflink /proc/self/maps)"
        "$SYS" status && echo "status-enabled: $?"
        "$SYS" enable --all "$LIB"
        "$SYS" disable
        cmp /tmp/plt_before.$$ /etc/ld.so.preload && echo identical
        [ "$(stat -c %a /etc/ld.so.preload)" = 640 ] && echo mode-kept
        rm -f /tmp/plt_before.$$
        "$SYS" status || echo "status-disabled: $?"
        echo "maps-after: $(grep -c elastic-jvmti-linux-proflink /proc/self/maps || true)"'
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "$output" == *"enabled $LIB in /etc/ld.so.preload"* ]]
    [[ "$output" == *"listed: 1"* ]]
    [[ "$output" == *"others: 2"* ]]
    grep -qE '^maps: [1-9]' <<<"$output"
    [[ "$output" == *"status-enabled: 0"* ]]
    [[ "$output" == *"already enabled"* ]]
    [[ "$output" == *identical* ]]
    [[ "$output" == *mode-kept* ]]
    [[ "$output" == *"status-disabled: 1"* ]]
    [[ "$output" == *"maps-after: 0"* ]]
}

@test "proflink-system: with no /etc/ld.so.preload before, disable removes it again" {
    run ns sh -ec '
        "$SYS" enable --all "$LIB"
        [ -f /etc/ld.so.preload ] && echo created
        "$SYS" disable
        [ ! -e /etc/ld.so.preload ] && echo removed'
    [ "$status" -eq 0 ]
    [[ "$output" == *created* ]] && [[ "$output" == *removed* ]]
}

@test "proflink-system: refuses a library that does not load into /bin/true, file untouched" {
    bad=$BATS_TEST_TMPDIR/elastic-jvmti-linux-proflink-$ARCH.so
    echo "not an ELF file" >"$bad"
    export BAD=$bad
    run ns sh -c '
        printf "# only a comment\n" >/etc/ld.so.preload
        "$SYS" enable "$BAD"; echo "enable-status: $?"
        printf "# only a comment\n" | cmp - /etc/ld.so.preload && echo untouched
        "$SYS" enable /relative/elastic-jvmti-linux-proflink-x.so; echo "relative-status: $?"
        "$SYS" enable /bin/true; echo "misnamed-status: $?"'
    [[ "$output" == *"refusing $bad: it does not load cleanly into /bin/true"* ]]
    [[ "$output" == *"enable-status: 1"* ]]
    [[ "$output" == *untouched* ]]
    [[ "$output" == *"relative-status: 1"* ]] && [[ "$output" == *"misnamed-status: 1"* ]]
}

@test "proflink-system: enable without a selection refuses every process, naming --include and --all" {
    run ns sh -c '
        printf "# only a comment\n" >/etc/ld.so.preload
        "$SYS" enable "$LIB"; echo "enable-status: $?"
        printf "# only a comment\n" | cmp - /etc/ld.so.preload && echo untouched
        [ ! -e /etc/proflink/proflink.conf ] && echo no-conf'
    echo "$output"
    [[ "$output" == *"refusing to activate proflink in every process of the host"* ]]
    [[ "$output" == *"at most 128 processes"* ]]
    [[ "$output" == *"enable --include '"* ]]
    [[ "$output" == *"enable --all"* ]]
    [[ "$output" == *"enable-status: 1"* ]]
    [[ "$output" == *untouched* ]]
    [[ "$output" == *no-conf* ]]
}

@test "proflink-system: enable --include writes the selection the library reads; an existing one is enough" {
    libc_independent
    command -v python3 >/dev/null || skip "python3 is not installed"
    setup_sockdir
    # the interpreter itself, not a shim or a link: the globs match the executable
    PY=$(python3 -c 'import os; print(os.path.realpath("/proc/self/exe"))')
    export PY
    run ns sh -ec '
        printf "PROFLINK_LOG=warn\n" >/etc/proflink.keep
        mkdir -p /etc/proflink && mv /etc/proflink.keep /etc/proflink/proflink.conf
        "$SYS" enable --include "$PY" "$LIB"
        cat /etc/proflink/proflink.conf
        echo "conf: $(stat -c "%U %a" /etc/proflink/proflink.conf)"
        "$SYS" status
        # the selected program publishes (its socket), unselected ones (sh, ls) do not while they run
        "$PY" -c "import os; print(\"py-sockets\", len(os.listdir(\"$ELASTIC_OTEL_UNIVERSAL_PROFILING_INTEGRATION_SOCKET_DIR\")))"
        sh -c "ls \"$ELASTIC_OTEL_UNIVERSAL_PROFILING_INTEGRATION_SOCKET_DIR\" | wc -l | sed s/^/sh-sockets\ /"
        "$SYS" disable
        # a selection already in proflink.conf: enable needs no option
        "$SYS" enable "$LIB" && echo enabled-by-conf
        "$SYS" disable
        chmod 664 /etc/proflink/proflink.conf
        "$SYS" enable "$LIB" || echo "group-writable-status: $?"'
    echo "$output"
    rm -rf "$SOCKDIR"
    [[ "$output" == *"PROFLINK_LOG=warn"* ]] # other lines kept
    grep -qx "PROFLINK_INCLUDE=$PY" <<<"$output"
    [[ "$output" == *"conf: root 644"* ]]
    [[ "$output" == *"selection: PROFLINK_INCLUDE=$PY"* ]]
    [[ "$output" == *"py-sockets 1"* ]]
    [[ "$output" == *"sh-sockets 0"* ]]
    [[ "$output" == *enabled-by-conf* ]]
    [[ "$output" == *"the library ignores it"* ]]
    [[ "$output" == *"group-writable-status: 1"* ]]
}

@test "proflink-system status: a listed library that is gone is reported broken, with the fix" {
    run ns sh -c '
        printf "/usr/local/lib/no-such/elastic-jvmti-linux-proflink-x86_64.so\n" >/etc/ld.so.preload
        "$SYS" status; echo "status: $?"'
    echo "$output"
    [[ "$output" == *"BROKEN: /usr/local/lib/no-such/elastic-jvmti-linux-proflink-x86_64.so does not exist"* ]]
    [[ "$output" == *"fix: proflink-system disable"* ]]
    [[ "$output" == *"status: 3"* ]]
}

@test "proflink-system disable: an entry added after enable stays; only proflink's goes" {
    other=$(readlink -f "$(gcc -print-file-name=libm.so.6)")
    export OTHER=$other
    run ns sh -ec '
        printf "# before\n" >/etc/ld.so.preload
        "$SYS" enable --all "$LIB"
        printf "%s\n" "$OTHER" >>/etc/ld.so.preload
        "$SYS" disable
        cat /etc/ld.so.preload
        [ ! -e /etc/proflink ] && echo no-state-left'
    echo "$output"
    [ "$status" -eq 0 ]
    grep -qx "# before" <<<"$output"
    grep -qx "$other" <<<"$output"
    refute grep -q elastic-jvmti-linux-proflink <<<"${lines[-2]}"
    [[ "$output" == *no-state-left* ]]
}

@test "proflink-system disable and release: another library on proflink's line stays (blank, tab or ':' between them)" {
    other=$(readlink -f "$(gcc -print-file-name=libm.so.6)")
    [ -f "$other" ]
    export OTHER=$other
    # ld.so reads blanks, tabs, ':' and newlines alike: an installer may have put both on a line
    run ns sh -ec '
        for line in "$OTHER $LIB" "$LIB:$OTHER" "$OTHER	$LIB" "  $LIB	$OTHER" "$OTHER:$LIB:$OTHER"; do
            printf "# kept\n%s\n" "$line" >/etc/ld.so.preload
            "$SYS" disable >/dev/null
            echo "after [$line]: [$(tr "\n" "|" </etc/ld.so.preload)] loads-other: $(if grep -q "$OTHER" /proc/self/maps; then echo yes; else echo no; fi)"
        done
        printf "%s:%s\n" "$OTHER" "$LIB" >/etc/ld.so.preload
        "$SYS" release "$LIB" >/dev/null
        echo "release: [$(tr "\n" "|" </etc/ld.so.preload)]"'
    echo "$output"
    [ "$status" -eq 0 ]
    [ "${lines[0]}" = "after [$other $LIB]: [# kept|$other|] loads-other: yes" ]
    [ "${lines[1]}" = "after [$LIB:$other]: [# kept|$other|] loads-other: yes" ]
    [ "${lines[2]}" = "after [$other	$LIB]: [# kept|$other|] loads-other: yes" ]
    [ "${lines[3]}" = "after [  $LIB	$other]: [# kept|  $other|] loads-other: yes" ]
    [ "${lines[4]}" = "after [$other:$LIB:$other]: [# kept|$other:$other|] loads-other: yes" ]
    [ "${lines[5]}" = "release: [$other|]" ]
}

@test "proflink-system dgram-queue: the package's datagram queue now and at boot; enable and status say when it is shorter" {
    unshare -n true 2>/dev/null || skip "no new network namespace here"
    local want
    want=$(sed -n 's/^net\.unix\.max_dgram_qlen = //p' "$ROOT/packaging/deb/sysctl.conf")
    [ "$want" -gt 10 ]
    # a network namespace of its own: the setting is per namespace, the host's stays as it is
    run ns unshare -n sh -ec '
        "$SYS" enable --all "$LIB"
        "$SYS" dgram-queue
        echo "now: $(cat /proc/sys/net/unix/max_dgram_qlen)"
        sed -n "s/^net.unix.max_dgram_qlen = /boot: /p" /etc/sysctl.d/60-proflink.conf
        echo "status: $("$SYS" status)"
        echo 4096 >/proc/sys/net/unix/max_dgram_qlen
        "$SYS" dgram-queue >/dev/null
        echo "longer kept: $(cat /proc/sys/net/unix/max_dgram_qlen)"
        "$SYS" disable >/dev/null'
    echo "$output"
    [ "$status" -eq 0 ]
    grep -q "^proflink-system: net.unix.max_dgram_qlen is 10 here: .* raise it now and at boot: proflink-system dgram-queue$" <<<"$output"
    grep -qx "now: $want" <<<"$output"
    grep -qx "boot: $want" <<<"$output"
    # said once: after enable, not by status once it was raised
    [ "$(grep -c 'here: the profiler drops' <<<"$output")" = 1 ]
    grep -qx "longer kept: 4096" <<<"$output"
}
