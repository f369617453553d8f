#!/usr/bin/env bats
# make install / make uninstall: the layout, the library names the profiler matches, the
# pkg-config file (dynamic and static linking with it), the installed proflink-run finding the
# installed libraries, and an uninstall that leaves nothing behind.
# modules: preload/leaves/version.c
load helpers
load ns_etc
bats_require_minimum_version 1.5.0

SONAME=elastic-jvmti-linux-proflink-$ARCH.so
MUSL_SONAME=elastic-jvmti-linux-proflink-musl-$ARCH.so
PREFIX=/usr/local

setup_file() {
    command -v pkg-config >/dev/null || {
        echo "pkg-config is not installed (apt-get install -y pkg-config)" >&2
        return 1
    }
    export DEST=$BATS_FILE_TMPDIR/dest
    make -s -C "$ROOT" install PREFIX="$PREFIX" DESTDIR="$DEST" >"$BATS_FILE_TMPDIR/install.log" 2>&1 || {
        cat "$BATS_FILE_TMPDIR/install.log" >&2
        return 1
    }
}

setup() { P=$DEST$PREFIX; }

# need_musl — skips, saying why, a test of the musl library where it was not built
need_musl() {
    if [ ! -f "$ROOT/build/musl/$MUSL_SONAME" ]; then
        skip "the musl library is not built (musl-gcc is not installed)"
    fi
}

@test "install: libraries keep the names the profiler matches, with the libproflink.so link" {
    [ -f "$P/lib/$SONAME" ]
    [ -x "$P/lib/$SONAME" ]
    cmp "$P/lib/$SONAME" "$ROOT/build/$SONAME"
    [ "$(readlink "$P/lib/libproflink.so")" = "$SONAME" ]
    [ "$(stat -c %a "$P/lib/libproflink.a")" = 644 ]
}

@test "install: the musl library keeps its name too, beside its libproflink.so link" {
    need_musl
    [ -x "$P/lib/proflink/musl/$MUSL_SONAME" ]
    cmp "$P/lib/proflink/musl/$MUSL_SONAME" "$ROOT/build/musl/$MUSL_SONAME"
    [ "$(readlink "$P/lib/proflink/musl/libproflink.so")" = "$MUSL_SONAME" ]
    [ -f "$P/lib/proflink/musl/libproflink.a" ]
}

@test "install: header, pkg-config file, proflink-run and the built tools" {
    cmp "$P/include/proflink.h" "$ROOT/include/proflink.h"
    [ -f "$P/lib/pkgconfig/proflink.pc" ]
    refute grep -q '@[A-Z_]*@' "$P/lib/pkgconfig/proflink.pc"
    [ -x "$P/bin/proflink-run" ]
    grep -qx "installed_libdir='$PREFIX/lib'" "$P/bin/proflink-run"
    [ -x "$P/bin/proflink-inspect" ]
    # nothing else: every installed file is one of these
    run bash -c "cd '$DEST' && find . -type f -o -type l | sort"
    for f in "${lines[@]}"; do
        case $f in
            ./usr/local/bin/proflink-run | ./usr/local/bin/proflink-inspect | ./usr/local/bin/proflink-agent) ;;
            ./usr/local/bin/proflink-system | ./usr/local/bin/proflink-fifo-cat) ;;
            ./usr/local/lib/"$SONAME" | ./usr/local/lib/libproflink.so | ./usr/local/lib/libproflink.a) ;;
            ./usr/local/lib/proflink/musl/"$MUSL_SONAME" | ./usr/local/lib/proflink/musl/libproflink.so) ;;
            ./usr/local/lib/proflink/musl/libproflink.a) ;;
            ./usr/local/include/proflink.h | ./usr/local/include/proflink.hpp) ;;
            ./usr/local/lib/pkgconfig/proflink.pc) ;;
            *) echo "unexpected file $f"; false ;;
        esac
    done
}

@test "install: proflink-agent, where it was built" {
    if [ ! -x "$ROOT/build/proflink-agent" ]; then
        skip "proflink-agent is not built (libunwind-dev is not installed)"
    fi
    [ -x "$P/bin/proflink-agent" ]
}

@test "the installed proflink-run finds the installed musl library for a musl program" {
    need_musl
    run "$P/bin/proflink-run" --print-lib "$ROOT/build/tests/musl/target_threads"
    [ "$status" -eq 0 ]
    [ "$output" = "$P/lib/proflink/musl/$MUSL_SONAME" ]
}

@test "the installed proflink-run finds the installed libraries" {
    run "$P/bin/proflink-run" --print-lib "$ROOT/build/tests/target_threads"
    [ "$status" -eq 0 ]
    [ "$output" = "$P/lib/$SONAME" ]
    # through a symbolic link to it, as from /usr/bin
    ln -s "$P/bin/proflink-run" "$BATS_TEST_TMPDIR/proflink-run"
    run "$BATS_TEST_TMPDIR/proflink-run" --print-lib ls
    [ "$output" = "$P/lib/$SONAME" ]
}

@test "pkg-config: flags, version and the preload variables" {
    export PKG_CONFIG_PATH=$P/lib/pkgconfig PKG_CONFIG_SYSROOT_DIR=$DEST
    run pkg-config --cflags --libs proflink
    [ "$status" -eq 0 ]
    read -ra words <<<"$output"
    [ "${words[*]}" = "-I$P/include -L$P/lib -lproflink" ]
    run pkg-config --modversion proflink
    [ "$output" = "$(sed -n 's/^#define PROFLINK_VERSION_STRING "\(.*\)"/\1/p' "$ROOT/include/proflink.h")" ]
    # the paths where the libraries will be once the tree is in place (pkgconf would prefix
    # them with the sysroot)
    unset PKG_CONFIG_SYSROOT_DIR
    run pkg-config --variable=preload proflink
    [ "$output" = "$PREFIX/lib/$SONAME" ]
    run pkg-config --variable=musl_preload proflink
    [ "$output" = "$PREFIX/lib/proflink/musl/$MUSL_SONAME" ]
}

@test "a program linked with pkg-config's -lproflink loads the library under its profiler-visible name" {
    export PKG_CONFIG_PATH=$P/lib/pkgconfig PKG_CONFIG_SYSROOT_DIR=$DEST
    cat >"$BATS_TEST_TMPDIR/linked.c" <<'EOF'
#include <stdio.h>
#include <unistd.h>
#include "proflink.h"
int main(void)
{
    printf("version %s\nready %d\n", proflink_version(), (int)getpid());
    fflush(stdout);
    sleep(10);
    return 0;
}
EOF
    # shellcheck disable=SC2046
    gcc -o "$BATS_TEST_TMPDIR/linked" "$BATS_TEST_TMPDIR/linked.c" $(pkg-config --cflags --libs proflink)
    readelf -dW "$BATS_TEST_TMPDIR/linked" | grep -F "Shared library: [$SONAME]"
    setup_sockdir
    LD_LIBRARY_PATH=$P/lib "$BATS_TEST_TMPDIR/linked" >"$BATS_TEST_TMPDIR/linked.out" &
    TARGET_PID=$!
    wait_for_line "$BATS_TEST_TMPDIR/linked.out" '^ready'
    grep -q "^version " "$BATS_TEST_TMPDIR/linked.out"
    # a DT_NEEDED library is in static TLS too: the profiler attaches
    wait_attachable "$TARGET_PID"
    stop_target
    rm -rf "$SOCKDIR"
}

@test "a static program linked with pkg-config --static" {
    export PKG_CONFIG_PATH=$P/lib/pkgconfig PKG_CONFIG_SYSROOT_DIR=$DEST
    printf '#include "proflink.h"\nint main(void) { return proflink_init() == 0 ? 0 : 1; }\n' >"$BATS_TEST_TMPDIR/s.c"
    # shellcheck disable=SC2046
    gcc -static -o "$BATS_TEST_TMPDIR/s" "$BATS_TEST_TMPDIR/s.c" $(pkg-config --static --cflags --libs proflink)
    readelf -lW "$BATS_TEST_TMPDIR/s" >"$BATS_TEST_TMPDIR/s.ph"
    refute grep -q INTERP "$BATS_TEST_TMPDIR/s.ph"
    setup_sockdir
    "$BATS_TEST_TMPDIR/s"
    rm -rf "$SOCKDIR"
}

@test "uninstall removes every installed file" {
    make -s -C "$ROOT" uninstall PREFIX="$PREFIX" DESTDIR="$DEST"
    run bash -c "cd '$DEST' && find . -type f -o -type l"
    [ -z "$output" ]
    [ ! -e "$P/lib/proflink" ]
}

@test "install with PREFIX only: proflink-run also works once copied elsewhere" {
    prefix=$BATS_TEST_TMPDIR/prefix
    make -s -C "$ROOT" install PREFIX="$prefix" >/dev/null
    cp "$prefix/bin/proflink-run" "$BATS_TEST_TMPDIR/moved-run"
    run "$BATS_TEST_TMPDIR/moved-run" --print-lib ls
    [ "$output" = "$prefix/lib/$SONAME" ]
    make -s -C "$ROOT" uninstall PREFIX="$prefix"
    [ -z "$(find "$prefix" -type f -o -type l)" ]
}

# The issue this guards against: `make uninstall` with the library still in /etc/ld.so.preload
# made every program of the host print "ERROR: ld.so: object ... cannot be preloaded".
@test "uninstall while the library is in /etc/ld.so.preload takes it out first, or refuses" {
    ns_etc_setup
    [ ! -f "$BATS_FILE_TMPDIR/skip" ] || skip "$(cut -d: -f2- "$BATS_FILE_TMPDIR/skip")"
    command -v setpriv >/dev/null || skip "setpriv (util-linux) is not installed"
    # the unprivileged make runs in the checkout, by relative paths: a checkout in root's home
    # (mode 700) is out of its reach by its absolute path
    cd "$ROOT" || return 1
    setpriv --reuid=65534 --regid=65534 --clear-groups test -r Makefile ||
        skip "the unprivileged user cannot read the source tree here"
    # readable by the unprivileged user too (bats' own directories are not)
    PFX=$(mktemp -d /tmp/plpfx.XXXXXX)
    chmod 755 "$PFX"
    export PFX ROOT SONAME
    # shellcheck disable=SC2016 # expanded in the namespace
    run ns_etc sh -c '
        make -s -C "$ROOT" install PREFIX="$PFX" LDCONFIG=: >/dev/null || exit 1
        printf "# kept\n" >/etc/ld.so.preload
        "$PFX/bin/proflink-system" enable --all >/dev/null || exit 1
        # not root: refused before anything is removed, with the command to run
        setpriv --reuid=65534 --regid=65534 --clear-groups make -s uninstall PREFIX="$PFX" 2>&1
        echo "as-nobody: $?"
        [ -f "$PFX/lib/$SONAME" ] && echo lib-kept
        grep -c elastic-jvmti-linux-proflink /etc/ld.so.preload
        make -s -C "$ROOT" uninstall PREFIX="$PFX" 2>&1; echo "as-root: $?"
        printf "# kept\n" | cmp - /etc/ld.so.preload && echo restored
        [ ! -e "$PFX/lib/$SONAME" ] && echo lib-removed
        echo "first-line: $(ls /bin 2>&1 | head -1)"'
    echo "$output"
    rm -rf "$PFX"
    [[ "$output" == *"is in /etc/ld.so.preload: removing it would make every program print a loader error; first run as root: proflink-system disable"* ]]
    refute grep -q "as-nobody: 0" <<<"$output"
    [[ "$output" == *lib-kept* ]]
    [[ "$output" == *"as-root: 0"* ]]
    [[ "$output" == *restored* ]]
    [[ "$output" == *lib-removed* ]]
    refute grep -q "cannot be preloaded" <<<"$output"
}
