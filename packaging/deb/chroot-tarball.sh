#!/bin/sh
# chroot-tarball.sh OUT.tar — a pristine Debian 12 (bookworm, minbase) root file system made by
# debootstrap from the Debian mirror, packed as OUT.tar. The package tests unpack a fresh copy
# for every run, so the download happens once (the tarball is cached under build/).
# MIRROR overrides the mirror; status 2 when debootstrap is missing or cannot reach it.
set -eu
out=$1
mirror=${MIRROR:-http://deb.debian.org/debian}
command -v debootstrap >/dev/null || { echo "debootstrap is not installed (apt-get install debootstrap)" >&2; exit 2; }
[ "$(id -u)" -eq 0 ] || { echo "debootstrap needs root" >&2; exit 2; }
mkdir -p "$(dirname "$out")"
root=$(mktemp -d "$(dirname "$out")/debootstrap.XXXXXX")
trap 'rm -rf "$root"' EXIT
if ! debootstrap --variant=minbase bookworm "$root" "$mirror" >"$root.log" 2>&1; then
    echo "debootstrap could not build bookworm from $mirror:" >&2
    tail -5 "$root.log" >&2
    rm -f "$root.log"
    exit 2
fi
rm -f "$root.log"
# the downloaded .debs are not part of a pristine system
rm -rf "$root"/var/cache/apt/archives/*.deb
tar -C "$root" -cf "$out.tmp" .
mv -f "$out.tmp" "$out"
