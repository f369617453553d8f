# ns_etc.bash — ns_etc_setup: writes $BATS_FILE_TMPDIR/ns_etc.sh, which runs a command in a
# private mount namespace whose /etc is an overlay on the host's (or a copy), without
# /etc/ld.so.preload and /etc/proflink: the command edits the real paths, as on a host, and the
# host's /etc is never touched. Writes $BATS_FILE_TMPDIR/skip when no namespace can be made.
# ns_etc CMD ARGS...: CMD in such a namespace.
# shellcheck shell=bash

ns_etc_setup() {
    local d=$BATS_FILE_TMPDIR
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

ns_etc() { NS_TMP=$BATS_FILE_TMPDIR unshare -m --propagation private "$BATS_FILE_TMPDIR/ns_etc.sh" "$@"; }
