#!/bin/sh
# build-deb.sh STAGE VERSION DEB_ARCH LIBDIR MAINTAINER OUT — turns the install tree STAGE
# (make install DESTDIR=STAGE PREFIX=/usr LIBDIR=...) into the Debian package OUT with dpkg-deb.
# The maintainer scripts never list the library in /etc/ld.so.preload; prerm takes it out if the
# administrator did (packaging/deb/prerm.in). postinst applies the datagram queue's sysctl
# drop-in (packaging/deb/sysctl.conf), postrm undoes it.
set -eu
stage=$1 version=$2 arch=$3 libdir=$4 maintainer=$5 out=$6
here=$(cd "$(dirname "$0")" && pwd)
command -v dpkg-deb >/dev/null || { echo "make deb: dpkg-deb is not installed" >&2; exit 1; }

lib=$(find "$stage$libdir" -maxdepth 1 -name 'elastic-jvmti-linux-proflink-*.so' -type f)
musl=$(find "$stage$libdir/proflink/musl" -maxdepth 1 -name 'elastic-jvmti-linux-proflink-musl-*.so' -type f)
if [ -z "$lib" ] || [ -z "$musl" ]; then
    echo "make deb: $stage lacks the glibc or the musl library" >&2
    exit 1
fi
lib=${lib#"$stage"} musl=${musl#"$stage"}

# Depends: the newest glibc symbol version any glibc-linked file needs (the musl build needs
# none, see the Makefile); the binaries name no other library.
glibc=$(for f in "$stage$lib" "$stage"/usr/bin/*; do
    if [ "$(head -c 4 "$f")" = "$(printf '\177ELF')" ]; then readelf -VW "$f"; fi
done | grep -o 'GLIBC_[0-9][0-9.]*' | sed 's/GLIBC_//' | sort -uV | tail -1)
for f in "$stage$lib" "$stage"/usr/bin/*; do
    [ "$(head -c 4 "$f")" = "$(printf '\177ELF')" ] || continue
    other=$(readelf -dW "$f" | sed -n 's/.*Shared library: \[\(.*\)\]/\1/p' |
        grep -Ev '^(libc|libm|libdl|libpthread|librt)\.so\.[0-9]+$|^ld-linux' || :)
    [ -z "$other" ] || { echo "make deb: $f needs $other, which the control file does not name" >&2; exit 1; }
done

# the datagram queue's sysctl drop-in (applied by postinst, at boot by systemd-sysctl or procps)
sysctl_file=60-proflink.conf
qlen=$(sed -n 's/^net\.unix\.max_dgram_qlen = \([0-9][0-9]*\)$/\1/p' "$here/sysctl.conf")
[ -n "$qlen" ] || { echo "make deb: $here/sysctl.conf sets no net.unix.max_dgram_qlen" >&2; exit 1; }
mkdir -p "$stage/usr/lib/sysctl.d"
cp "$here/sysctl.conf" "$stage/usr/lib/sysctl.d/$sysctl_file"
chmod 644 "$stage/usr/lib/sysctl.d/$sysctl_file"

mkdir -p "$stage/DEBIAN"
size=$(du -sk --exclude=DEBIAN "$stage" | cut -f1)
sed -e "s|@VERSION@|$version|" -e "s|@ARCH@|$arch|" -e "s|@MAINTAINER@|$maintainer|" \
    -e "s|@SIZE@|$size|" -e "s|@DEPENDS@|libc6 (>= $glibc)|" "$here/control.in" >"$stage/DEBIAN/control"
for s in prerm postinst postrm; do
    sed -e "s|@LIB@|$lib|" -e "s|@MUSL_LIB@|$musl|" -e "s|@QLEN@|$qlen|g" \
        -e "s|@SYSCTL_FILE@|$sysctl_file|g" "$here/$s.in" >"$stage/DEBIAN/$s"
    chmod 755 "$stage/DEBIAN/$s"
done
grep -v '^#' "$here/triggers" >"$stage/DEBIAN/triggers"
chmod 644 "$stage/DEBIAN/control" "$stage/DEBIAN/triggers"
dpkg-deb --root-owner-group -Zxz --build "$stage" "$out" >/dev/null
echo "built $out"
