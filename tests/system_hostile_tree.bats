#!/usr/bin/env bats
# shellcheck shell=bash
# proflink-system enable/disable run as root on a tree (PROFLINK_SYSTEM_ROOT) that someone else
# prepared: a symlink planted at any path it writes, or a directory another user owns or may
# write to, must make it refuse with a message naming the path, and leave the file the link
# points to (a stand-in for /etc/shadow, outside the tree) as it was: bytes, mode, owner.
load helpers
bats_require_minimum_version 1.5.0

SYS=$ROOT/scripts/proflink-system

setup() {
    [ "$(id -u)" -eq 0 ] || skip "proflink-system enable and disable run as root"
    TREE=$BATS_TEST_TMPDIR/tree
    mkdir -p "$TREE/etc" "$TREE/usr/lib"
    chmod 755 "$TREE" "$TREE/etc"
    TLIB=/usr/lib/elastic-jvmti-linux-proflink-$ARCH.so
    # shellcheck disable=SC2153 # LIB: the library under test (helpers.bash)
    cp "$LIB" "$TREE$TLIB"
    SHADOW=$BATS_TEST_TMPDIR/shadow
    echo 'root:x-not-a-real-hash:19000:0:99999:7:::' >"$SHADOW"
    chmod 640 "$SHADOW"
    SHADOW_WAS=$(shadow_state)
    export PROFLINK_SYSTEM_ROOT=$TREE
}

# shadow_state: the stand-in's bytes (hash), mode and owner
shadow_state() {
    printf '%s %s\n' "$(sha256sum <"$SHADOW" | cut -d' ' -f1)" "$(stat -c '%a %u:%g' "$SHADOW")"
}

# refused WHAT PATH CMD... — CMD fails, says it refuses PATH for WHAT, and the stand-in is as it was
refused() {
    local what=$1 path=$2
    shift 2
    run "$@"
    echo "$output"
    echo "stand-in: $(shadow_state), was $SHADOW_WAS"
    [ "$(shadow_state)" = "$SHADOW_WAS" ]
    [ "$status" -ne 0 ]
    [[ "$output" == *"refusing $path: $what"* ]]
}

@test "proflink-system enable: a symlink at ld.so.preload.before, proflink.conf.tmp, proflink.conf or ld.so.preload is refused; its target is untouched" {
    local name
    for name in ld.so.preload.before proflink.conf.tmp proflink.conf; do
        rm -rf "$TREE/etc/proflink"
        mkdir -m 755 "$TREE/etc/proflink"
        printf '/lib/other.so\n' >"$TREE/etc/ld.so.preload"
        ln -s "$SHADOW" "$TREE/etc/proflink/$name"
        refused "it is a symbolic link" "$TREE/etc/proflink/$name" "$SYS" enable --include '/usr/bin/*' "$TLIB"
        # nothing was enabled either
        [ "$(cat "$TREE/etc/ld.so.preload")" = /lib/other.so ]
    done
    rm -rf "$TREE/etc/proflink" "$TREE/etc/ld.so.preload"
    ln -s "$SHADOW" "$TREE/etc/ld.so.preload"
    refused "it is a symbolic link" "$TREE/etc/ld.so.preload" "$SYS" enable --all "$TLIB"
    refused "it is a symbolic link" "$TREE/etc/ld.so.preload" "$SYS" disable
    [ -L "$TREE/etc/ld.so.preload" ]
}

@test "proflink-system disable: a symlink planted at ld.so.preload.before or ld.so.preload.absent after enable is refused; its target is untouched" {
    local name
    for name in ld.so.preload.before ld.so.preload.absent; do
        rm -rf "$TREE/etc/proflink"
        if [ "$name" = ld.so.preload.before ]; then printf '/lib/other.so\n' >"$TREE/etc/ld.so.preload"; else rm -f "$TREE/etc/ld.so.preload"; fi
        "$SYS" enable --all "$TLIB"
        rm -f "$TREE/etc/proflink/$name"
        ln -s "$SHADOW" "$TREE/etc/proflink/$name"
        refused "it is a symbolic link" "$TREE/etc/proflink/$name" "$SYS" disable
        # the secret did not reach the preload file
        refute grep -q not-a-real-hash "$TREE/etc/ld.so.preload"
        rm -f "$TREE/etc/proflink/$name"
    done
}

@test "proflink-system: a directory of the tree that another user owns or may write to is refused" {
    mkdir -m 755 "$TREE/etc/proflink"
    chown 65534 "$TREE/etc/proflink"
    refused "it belongs to uid 65534" "$TREE/etc/proflink" "$SYS" enable --include '/usr/bin/*' "$TLIB"
    refute test -e "$TREE/etc/ld.so.preload"
    chown 0 "$TREE/etc/proflink"
    chmod 777 "$TREE/etc/proflink"
    refused "others may write to it (mode 777)" "$TREE/etc/proflink" "$SYS" enable --include '/usr/bin/*' "$TLIB"
    rm -rf "$TREE/etc/proflink"
    # etc/proflink a link to another directory: enable would write where the link points
    mkdir -m 755 "$BATS_TEST_TMPDIR/elsewhere"
    ln -s "$BATS_TEST_TMPDIR/elsewhere" "$TREE/etc/proflink"
    refused "it is a symbolic link" "$TREE/etc/proflink" "$SYS" enable --include '/usr/bin/*' "$TLIB"
    [ -z "$(ls -A "$BATS_TEST_TMPDIR/elsewhere")" ]
    rm "$TREE/etc/proflink"
    chown 65534 "$TREE/etc"
    refused "it belongs to uid 65534" "$TREE/etc" "$SYS" enable --all "$TLIB"
    chown 0 "$TREE/etc"
    chown 65534 "$TREE"
    refused "it belongs to uid 65534" "$TREE" "$SYS" enable --all "$TLIB"
    chown 0 "$TREE"
    # another user's file in proflink's directory, and the preload file itself another user's
    mkdir -m 755 "$TREE/etc/proflink"
    printf 'PROFLINK_INCLUDE=/usr/bin/*\n' >"$TREE/etc/proflink/proflink.conf"
    chown 65534 "$TREE/etc/proflink/proflink.conf"
    refused "it belongs to uid 65534" "$TREE/etc/proflink/proflink.conf" "$SYS" enable "$TLIB"
    rm -rf "$TREE/etc/proflink"
    printf '/lib/other.so\n' >"$TREE/etc/ld.so.preload"
    chown 65534 "$TREE/etc/ld.so.preload"
    refused "it belongs to uid 65534" "$TREE/etc/ld.so.preload" "$SYS" enable --all "$TLIB"
    [ "$(cat "$TREE/etc/ld.so.preload")" = /lib/other.so ]
}

@test "proflink-system on a clean tree: enable and disable still work, through fresh files renamed into place" {
    printf '/lib/other.so\n' >"$TREE/etc/ld.so.preload"
    "$SYS" enable --include '/usr/bin/*' "$TLIB"
    grep -qx "$TLIB" "$TREE/etc/ld.so.preload"
    grep -qx 'PROFLINK_INCLUDE=/usr/bin/\*' "$TREE/etc/proflink/proflink.conf"
    [ "$(stat -c '%a %u' "$TREE/etc/proflink/proflink.conf")" = "644 0" ]
    printf '/lib/other.so\n' | cmp - "$TREE/etc/proflink/ld.so.preload.before"
    "$SYS" disable
    printf '/lib/other.so\n' | cmp - "$TREE/etc/ld.so.preload"
    # no temporary file left behind
    [ -z "$(find "$TREE/etc" -name '*.proflink*' -o -name '.proflink*')" ]
}
