#!/bin/bash
# pristine-check.sh — does the README's first command work on a fresh Debian 12?
# usage (root): scripts/pristine-check.sh [DIR] [TARGET…]   (targets: demo, default; check)
# Builds a minimal Debian 12 chroot in DIR (default /tmp/proflink-pristine) with only gcc, make,
# git and python3 (debootstrap, from the mirror apt already uses), clones this repository into
# it and runs `make TARGET` as root there: the dependency step must install the rest itself.
# Not part of `make check`: it downloads a system and takes minutes. /proc, /sys and /dev are
# bind-mounted for the run and unmounted after; the host's files are not touched.
set -euo pipefail
dir=${1:-/tmp/proflink-pristine}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(demo)
[ "$(id -u)" = 0 ] || { echo "pristine-check: run as root (debootstrap, chroot)" >&2; exit 2; }
command -v debootstrap >/dev/null || apt-get install -y debootstrap
mirror=$(sed -n 's/^URIs: *//p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -1)
mirror=${mirror:-http://deb.debian.org/debian}
repo=$(cd "$(dirname "$0")/.." && pwd)
if [ ! -x "$dir/usr/bin/gcc" ]; then
    echo "pristine-check: debootstrap bookworm into $dir (gcc make git python3 only)"
    debootstrap --variant=minbase --include=gcc,make,git,python3,ca-certificates bookworm "$dir" "$mirror"
fi
cleanup() { for m in dev/pts dev sys proc; do umount -R "$dir/$m" 2>/dev/null || true; done; }
trap cleanup EXIT
mount -t proc proc "$dir/proc"
mount --rbind /sys "$dir/sys" && mount --make-rslave "$dir/sys"
mount --bind /dev "$dir/dev"
mount --bind /dev/pts "$dir/dev/pts"
cp /etc/resolv.conf "$dir/etc/resolv.conf"
rm -rf "$dir/root/proflink"
git clone -q "$repo" "$dir/root/proflink"
for t in "${targets[@]}"; do
    echo "pristine-check: make $t"
    start=$(date +%s)
    chroot "$dir" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root TERM=dumb \
        make -C /root/proflink "$t"
    echo "pristine-check: make $t passed in $(($(date +%s) - start)) s"
done
