#!/usr/bin/env bats
# The Debian package (make deb) on a pristine Debian 12: a root file system made by debootstrap
# (cached as build/debian12-chroot.tar), unpacked afresh for each test and entered with chroot in
# private mount and pid namespaces, so nothing of the host is touched and nothing started in it
# outlives the test. Installs with the README's container recipe, never enables host-wide
# preload by itself, and dpkg -r / --purge leave /etc/ld.so.preload byte-identical and no file.
# shellcheck shell=bash
# the scripts run in the chroot expand their own variables
# shellcheck disable=SC2016
load helpers
bats_require_minimum_version 1.5.0

TARBALL=$ROOT/build/debian12-chroot.tar

setup_file() {
    local d=$BATS_FILE_TMPDIR
    if [ "$(id -u)" -ne 0 ]; then
        echo "skip: needs root (chroot, namespaces)" >"$d/skip"; return 0
    fi
    if ! unshare -m -p -f true 2>"$d/ns.err"; then
        echo "skip: cannot make mount and pid namespaces here ($(head -c 200 "$d/ns.err"))" >"$d/skip"; return 0
    fi
    if ! command -v musl-gcc >/dev/null; then
        echo "skip: the package ships the musl build: musl-tools is not installed" >"$d/skip"; return 0
    fi
    make -s -C "$ROOT" deb >"$d/deb.log" 2>&1 || { cat "$d/deb.log" >&2; return 1; }
    if [ ! -f "$TARBALL" ]; then
        local st=0
        "$ROOT/packaging/deb/chroot-tarball.sh" "$TARBALL" 2>"$d/debootstrap.err" || st=$?
        if [ "$st" = 2 ]; then
            echo "skip: no pristine Debian 12: $(tr '\n' ' ' <"$d/debootstrap.err" | head -c 300)" >"$d/skip"; return 0
        fi
        [ "$st" = 0 ] || { cat "$d/debootstrap.err" >&2; return 1; }
    fi
}

setup() {
    [ ! -f "$BATS_FILE_TMPDIR/skip" ] || skip "$(cut -d: -f2- "$BATS_FILE_TMPDIR/skip")"
    local version
    version=$(sed -n 's/^#define PROFLINK_VERSION_STRING "\(.*\)"/\1/p' "$ROOT/include/proflink.h")
    DEB=$ROOT/build/deb/proflink_${version}_$(dpkg --print-architecture).deb
    [ -f "$DEB" ]
    R=$(mktemp -d /tmp/pldeb.XXXXXX)
    tar -C "$R" -xf "$TARBALL"
}

teardown() {
    # the namespaces are gone with their last process: no mount is left under $R
    if [ -n "${R:-}" ] && ! grep -qF " $R/" /proc/self/mountinfo; then rm -rf "$R"; fi
}

# in_root SCRIPT: runs the sh SCRIPT inside the chroot, as a fresh system would (clean environment),
# in a network namespace of its own: the package sets net.unix.max_dgram_qlen, a setting of the
# network namespace, and the host's must not change
in_root() {
    unshare -m -p -n -f --mount-proc="$R/proc" chroot "$R" \
        /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
        sh -c "$1"
}

# snapshot: every path of the chroot but dpkg's and apt's own records, logs, caches and the linker cache
snapshot() {
    (cd "$R" && find . -xdev \( -path ./proc -o -path ./var/lib/dpkg -o -path ./var/lib/apt -o -path ./var/log \
        -o -path ./var/cache -o -path ./tmp -o -path ./etc/ld.so.cache \) -prune -o -print | sort)
}

# ATTACHABLE PID: waits until proflink-inspect (the package's) says the profiler would attach
wait_attachable_in_root='
attachable() {
    for _ in $(seq 100); do
        proflink-inspect --no-threads "$1" >/dev/null 2>&1 && break
        sleep 0.1
    done
    proflink-inspect --no-threads "$1" | tail -1
}'

@test "package: the README's container recipe installs it, enables nothing, and the entrypoint makes the service attachable" {
    # the recipe is the README's dockerfile block, run line by line
    local recipe run_lines='' entry=''
    recipe=$(sed -n '/^```dockerfile$/,/^```$/p' "$ROOT/README.md")
    [ -n "$recipe" ]
    while IFS= read -r line; do
        case $line in
            'COPY '*)
                # shellcheck disable=SC2086
                set -- ${line#COPY }
                [[ $1 == *.deb ]]
                cp "$DEB" "$R$2" ;;
            'RUN '*) run_lines+="${line#RUN }"$'\n' ;;
            'ENTRYPOINT '*) entry=$(python3 -c 'import json, shlex, sys; print(shlex.join(json.loads(sys.argv[1])))' "${line#ENTRYPOINT }") ;;
            'CMD '*) entry+=" $(python3 -c 'import json, shlex, sys; print(shlex.join(json.loads(sys.argv[1])))' "${line#CMD }")" ;;
        esac
    done <<<"$recipe"
    [ -n "$run_lines" ]
    [[ $entry == proflink-run* ]]
    snapshot >"$BATS_TEST_TMPDIR/before"
    run in_root "set -e
$run_lines
echo installed
if [ ! -e /etc/ld.so.preload ]; then echo no-preload; fi
proflink-run --version
$wait_attachable_in_root
$entry &
attachable \$!
proflink-inspect --no-threads \$! | grep '^PASS  storage'"
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "$output" == *installed* ]]
    [[ "$output" == *no-preload* ]]
    [[ "$output" == *"result: attachable"* ]]
    [[ "$output" == *'service-name "checkout"'* ]]
    # installing added files under /usr only, and no /etc/ld.so.preload
    snapshot | comm -13 "$BATS_TEST_TMPDIR/before" - >"$BATS_TEST_TMPDIR/added"
    refute grep -v '^\./usr/' "$BATS_TEST_TMPDIR/added"
    grep -q "/elastic-jvmti-linux-proflink-musl-$ARCH.so\$" "$BATS_TEST_TMPDIR/added"
}

@test "package: dpkg -r while enabled restores /etc/ld.so.preload byte-identical; --purge leaves no file" {
    local other=/lib/$ARCH-linux-gnu/libm.so.6
    [ -f "$R$other" ]
    # an entry of the administrator's, a comment, no newline at the end, an unusual mode
    printf '%s\n# kept as is\n  %s' "$other" "$other" >"$R/etc/ld.so.preload"
    chmod 640 "$R/etc/ld.so.preload"
    cp -p "$R/etc/ld.so.preload" "$BATS_TEST_TMPDIR/preload.before"
    cp "$DEB" "$R/tmp/proflink.deb"
    snapshot >"$BATS_TEST_TMPDIR/before"
    run in_root "
$wait_attachable_in_root
dpkg -i /tmp/proflink.deb >/dev/null 2>&1 && echo installed
proflink-system enable --include /usr/bin/sleep
sleep 60 &
attachable \$!
kill \$!
echo \"loader-before: \$(ls / 2>&1 >/dev/null)\"
dpkg -r proflink 2>&1
echo \"dpkg-r: \$?\"
echo \"loader-after: \$(ls / 2>&1 >/dev/null)\"
[ -f /etc/proflink/proflink.conf ] && echo conf-kept
dpkg --purge proflink >/dev/null 2>&1
echo \"purge: \$?\"
echo \"loader-purged: \$(ls / 2>&1 >/dev/null)\""
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "$output" == *installed* ]]
    [[ "$output" == *"result: attachable"* ]]
    grep -qx "loader-before: " <<<"$output"
    [[ "$output" == *"dpkg-r: 0"* ]]
    grep -qx "loader-after: " <<<"$output"
    [[ "$output" == *conf-kept* ]]
    [[ "$output" == *"purge: 0"* ]]
    grep -qx "loader-purged: " <<<"$output"
    cmp "$BATS_TEST_TMPDIR/preload.before" "$R/etc/ld.so.preload"
    [ "$(stat -c %a "$R/etc/ld.so.preload")" = 640 ]
    rm -f "$R/tmp/proflink.deb"
    snapshot | diff "$BATS_TEST_TMPDIR/before" -
}

@test "package: --purge while enabled --all, with no /etc/ld.so.preload before, leaves none" {
    cp "$DEB" "$R/tmp/proflink.deb"
    snapshot >"$BATS_TEST_TMPDIR/before"
    run in_root '
dpkg -i /tmp/proflink.deb >/dev/null 2>&1 && echo installed
proflink-system enable --all >/dev/null && echo enabled
grep -c elastic-jvmti-linux-proflink /proc/self/maps
dpkg --purge proflink >/dev/null 2>&1; echo "purge: $?"
echo "loader: $(ls / 2>&1 >/dev/null)"'
    echo "$output"
    [[ "$output" == *enabled* ]]
    [ "${lines[2]}" -ge 1 ]
    [[ "$output" == *"purge: 0"* ]]
    grep -qx "loader: " <<<"$output"
    [ ! -e "$R/etc/ld.so.preload" ]
    [ ! -e "$R/etc/proflink" ]
    rm -f "$R/tmp/proflink.deb"
    snapshot | diff "$BATS_TEST_TMPDIR/before" -
}

@test "package: installing raises net.unix.max_dgram_qlen (a drop-in in /usr/lib/sysctl.d, applied at once); dpkg -r puts the kernel's value back, --purge leaves no file" {
    local want
    want=$(sed -n 's/^net\.unix\.max_dgram_qlen = //p' "$ROOT/packaging/deb/sysctl.conf")
    [ "$want" -gt 10 ]
    cp "$DEB" "$R/tmp/proflink.deb"
    snapshot >"$BATS_TEST_TMPDIR/before"
    run in_root '
q=/proc/sys/net/unix/max_dgram_qlen
echo "before: $(cat $q)"
dpkg -i /tmp/proflink.deb >/dev/null 2>&1 && echo installed
echo "installed: $(cat $q)"
sed -n "s/^net.unix.max_dgram_qlen = /drop-in: /p" /usr/lib/sysctl.d/60-proflink.conf
dpkg -r proflink >/dev/null 2>&1; echo "removed: $(cat $q)"
[ -e /usr/lib/sysctl.d/60-proflink.conf ] || echo drop-in-gone
echo 1000 >$q
dpkg -i /tmp/proflink.deb >/dev/null 2>&1 && echo "a longer queue is kept: $(cat $q)"
dpkg --purge proflink >/dev/null 2>&1; echo "purged: $(cat $q)"'
    echo "$output"
    [ "$status" -eq 0 ]
    grep -qx "before: 10" <<<"$output"
    grep -qx installed <<<"$output"
    grep -qx "installed: $want" <<<"$output"
    grep -qx "drop-in: $want" <<<"$output"
    grep -qx "removed: 10" <<<"$output"
    grep -qx drop-in-gone <<<"$output"
    grep -qx "a longer queue is kept: 1000" <<<"$output"
    grep -qx "purged: 1000" <<<"$output"
    rm -f "$R/tmp/proflink.deb"
    snapshot | diff "$BATS_TEST_TMPDIR/before" -
}

@test "package contents: arch-specific, libc6 only, both libraries, the tools and the sysctl drop-in; postinst touches no preload" {
    run dpkg-deb -f "$DEB" Package Architecture Depends
    [ "${lines[0]}" = "Package: proflink" ]
    [ "${lines[1]}" = "Architecture: $(dpkg --print-architecture)" ]
    [[ ${lines[2]} =~ ^Depends:\ libc6\ \(\>=\ 2\.[0-9]+\)$ ]]
    run dpkg-deb -c "$DEB"
    for f in usr/bin/proflink-run usr/bin/proflink-system usr/bin/proflink-inspect usr/bin/proflink-fifo-cat \
        "usr/lib/$ARCH-linux-gnu/elastic-jvmti-linux-proflink-$ARCH.so" \
        "usr/lib/$ARCH-linux-gnu/proflink/musl/elastic-jvmti-linux-proflink-musl-$ARCH.so" \
        usr/include/proflink.h "usr/lib/$ARCH-linux-gnu/pkgconfig/proflink.pc" \
        usr/lib/sysctl.d/60-proflink.conf; do
        grep -q " \./$f\( \|$\)" <<<"$output" || { echo "missing $f"; false; }
    done
    refute grep -q proflink-agent <<<"$output"
    dpkg-deb -e "$DEB" "$BATS_TEST_TMPDIR/control"
    # nothing the package runs ever adds the library to /etc/ld.so.preload (postinst only sets
    # the datagram queue)
    grep -v '^ *#' "$BATS_TEST_TMPDIR/control/postinst" >"$BATS_TEST_TMPDIR/postinst.code"
    refute grep -q 'ld\.so\.preload\|proflink-system' "$BATS_TEST_TMPDIR/postinst.code"
    refute grep -q 'enable' "$BATS_TEST_TMPDIR/control/prerm" "$BATS_TEST_TMPDIR/control/postrm" \
        "$BATS_TEST_TMPDIR/control/postinst"
}
