#!/bin/bash
# pristine-check.sh — does the README's first command work on a fresh Debian 12?
# usage (root): scripts/pristine-check.sh [DIR] [TARGET…]   (targets: demo, default; check)
# Builds a minimal Debian 12 root file system in DIR (default /tmp/proflink-pristine) with only
# gcc, make, git and python3 (debootstrap, from the mirror apt already uses), clones this
# repository into it and runs `make TARGET` as root there: the dependency step must install the
# rest itself. Not part of `make check`: it downloads a system and takes minutes.
# DIR is entered as the root of a private mount namespace (pivot_root), not with chroot: in a
# chroot the kernel refuses new user namespaces and / is no mount point (no private mount
# namespace), so tests a real machine runs would skip. /proc, /sys and /dev are mounted in that
# namespace only and go with it; the host's files are not touched.
set -euo pipefail
dir=${1:-/tmp/proflink-pristine}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(demo)
[ "$(id -u)" = 0 ] || { echo "pristine-check: run as root (debootstrap, namespaces)" >&2; exit 2; }
command -v debootstrap >/dev/null || apt-get install -y debootstrap
mirror=$(sed -n 's/^URIs: *//p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -1)
mirror=${mirror:-http://deb.debian.org/debian}
repo=$(cd "$(dirname "$0")/.." && pwd)
if [ ! -x "$dir/usr/bin/gcc" ]; then
    echo "pristine-check: debootstrap bookworm into $dir (gcc make git python3 only)"
    debootstrap --variant=minbase --include=gcc,make,git,python3,ca-certificates bookworm "$dir" "$mirror"
fi
cp /etc/resolv.conf "$dir/etc/resolv.conf"

# This machine's network reaches the chroot, not its packages: the proxy variables, pip's and
# npm's settings, and the CA files they name (an intercepting proxy's CA, which Debian's store
# lacks). Each named file or directory is copied under /etc/pristine-net/ in the chroot, and the
# variables and copied configuration point there: the chroot's own trust store stays Debian's.
net=/etc/pristine-net
rm -rf "${dir:?}$net"
declare -A carried=()
carry() { # PATH: copies it into the chroot, once; $copy is the copy's path there
    if [ -z "${carried[$1]:-}" ]; then
        carried[$1]=$net/${#carried[@]}-$(basename "$1")
        mkdir -p "$dir$net"
        cp -rL "$1" "$dir${carried[$1]}"
    fi
    copy=${carried[$1]}
}
cavars=" SSL_CERT_FILE SSL_CERT_DIR REQUESTS_CA_BUNDLE CURL_CA_BUNDLE NODE_EXTRA_CA_CERTS GIT_SSL_CAINFO PIP_CERT NPM_CONFIG_CAFILE npm_config_cafile "
netenv=()
for name in $(compgen -e); do
    if [[ $cavars != *" $name "* &&
          ! $name =~ ^((http|https|ftp|all|no|HTTP|HTTPS|FTP|ALL|NO)_(proxy|PROXY)|PIP_.*|NPM_CONFIG_.*|npm_config_.*)$ ]]; then
        continue
    fi
    value=${!name}
    if [[ $cavars == *" $name "* && $value == /* && -e $value ]]; then
        carry "$value"
        value=$copy
    elif [[ $value == /* ]]; then
        continue # another local path (a wheel directory): this machine's packages stay out
    fi
    netenv+=("$name=$value")
done
for conf in /etc/pip.conf /root/.config/pip/pip.conf /root/.pip/pip.conf /root/.npmrc; do
    [ -f "$conf" ] || continue
    mkdir -p "$(dirname "$dir$conf")"
    install -m "$(stat -c %a "$conf")" /dev/null "$dir$conf"
    while IFS= read -r line || [ -n "$line" ]; do
        # pip's "cert = FILE", npm's "cafile=FILE"
        if [[ $line =~ ^([[:space:]]*(cert|cafile)[[:space:]]*=[[:space:]]*)(/[^[:space:]]*)[[:space:]]*$ ]] &&
            [ -e "${BASH_REMATCH[3]}" ]; then
            key=${BASH_REMATCH[1]}
            carry "${BASH_REMATCH[3]}"
            line=$key$copy
        fi
        printf '%s\n' "$line"
    done <"$conf" >"$dir$conf"
done
[ ${#netenv[@]} -eq 0 ] || echo "pristine-check: network settings carried: ${netenv[*]%%=*}"
rm -rf "$dir/root/proflink"
git clone -q "$repo" "$dir/root/proflink"
# enter DIR N NAME=VALUE×N TARGET…: in the new mount namespace, DIR becomes / and each make
# TARGET runs there with only the N network settings in its environment
enter() {
    local dir=$1 n=$2
    shift 2
    local netenv=("${@:1:n}")
    shift "$n"
    mount --bind "$dir" "$dir"
    mount -t proc proc "$dir/proc"
    mount --rbind /sys "$dir/sys"
    mount --rbind /dev "$dir/dev"
    cd "$dir"
    mkdir -p .oldroot
    pivot_root . .oldroot
    umount -l /.oldroot
    rmdir /.oldroot
    cd /
    local t start
    for t; do
        echo "pristine-check: make $t"
        start=$(date +%s)
        /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root TERM=dumb \
            "${netenv[@]}" make -C /root/proflink "$t"
        echo "pristine-check: make $t passed in $(($(date +%s) - start)) s"
    done
}
unshare -m --propagation private bash -c "set -euo pipefail; $(declare -f enter); enter \"\$@\"" \
    enter "$dir" ${#netenv[@]} "${netenv[@]}" "${targets[@]}"
