#!/usr/bin/env bats
# scripts/proflink-system enable|disable|status on /etc/ld.so.preload. Each run happens in a
# private mount namespace whose /etc is an overlay (or a copy), so the host's /etc is never
# touched; inside it the script edits the real path, as it would on a host.
# shellcheck shell=bash
# the scripts run in the namespace expand their own variables
# shellcheck disable=SC2016
load helpers
bats_require_minimum_version 1.5.0

SYS=$ROOT/scripts/proflink-system

setup_file() {
    local d=$BATS_FILE_TMPDIR
    # ns_etc.sh CMD ARGS...: CMD in a mount namespace with a private, writable /etc
    cat >"$d/ns_etc.sh" <<'SH'
#!/bin/sh
m=$(mktemp -d "${NS_TMP:-/tmp}/plns.XXXXXX") || exit 90
mount -t tmpfs tmpfs "$m" || exit 91
mkdir "$m/up" "$m/work" "$m/etc"
if ! mount -t overlay overlay -o "lowerdir=/etc,upperdir=$m/up,workdir=$m/work" /etc 2>/dev/null; then
    cp -a /etc/. "$m/etc/" && mount --bind "$m/etc" /etc || exit 92
fi
rm -f /etc/ld.so.preload
rm -rf /etc/proflink
exec "$@"
SH
    chmod +x "$d/ns_etc.sh"
    export NS_TMP=$d
    if ! unshare -m --propagation private "$d/ns_etc.sh" true 2>"$d/ns.err"; then
        echo "skip: cannot make a private mount namespace here ($(head -c 200 "$d/ns.err"))" >"$d/skip"
    fi
}

setup() {
    [ ! -f "$BATS_FILE_TMPDIR/skip" ] || skip "$(cut -d: -f2- "$BATS_FILE_TMPDIR/skip")"
    export NS_TMP=$BATS_FILE_TMPDIR SYS LIB
}

ns() { unshare -m --propagation private "$BATS_FILE_TMPDIR/ns_etc.sh" "$@"; }

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
        "$SYS" enable "$LIB"
        echo "listed: $(grep -c elastic-jvmti-linux-proflink /etc/ld.so.preload)"
        echo "others: $(grep -c "$OTHER" /etc/ld.so.preload)"
        echo "maps: $(grep -c elastic-jvmti-linux-proflink /proc/self/maps)"
        "$SYS" status && echo "status-enabled: $?"
        "$SYS" enable "$LIB"
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
        "$SYS" enable "$LIB"
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
