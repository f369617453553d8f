#!/usr/bin/env bash
# deps.sh GOAL — makes sure the Debian 12 packages GOAL needs are installed (GOAL: build, demo,
# check). Missing packages are named with the reason; as root they are installed with one
# `apt-get install` line, otherwise that line is printed and the exit status is 1. Nothing is
# installed when everything is present. dpkg and apt-get are found on PATH.
set -euo pipefail

goal=${1:-build}

# package, then why it is needed
build=(gcc "compiler" libc6-dev "C library headers (Debian's gcc does not pull them in)" make "build" libunwind-dev "proflink-agent unwinds stacks with libunwind")
demo=("${build[@]}" python3 "the demo checks the delivered ids")
check=("${demo[@]}"
       g++ "C++ header tests" shellcheck "lint" bats "test runner" musl-tools "musl variant" bpftrace "eBPF reader tests"
       python3-pyelftools "ELF checks" valgrind "memory checks" protobuf-compiler "protobuf decoding"
       pkg-config "install tests" clang "fuzz target" binutils "objcopy, readelf"
       strace "syscall checks" util-linux "unshare, setpriv" busybox "busybox/static tests"
       python3-fuse "a FUSE file system that logs FLUSH (host_safety tests)")

case $goal in
    build) want=("${build[@]}") ;;
    demo) want=("${demo[@]}") ;;
    check) want=("${check[@]}") ;;
    *) echo "usage: deps.sh build|demo|check" >&2; exit 2 ;;
esac

missing=() reasons=()
for ((i = 0; i < ${#want[@]}; i += 2)); do
    pkg=${want[i]}
    # dpkg -s also succeeds for removed-but-configured packages; the status line says which
    if ! dpkg -s "$pkg" 2>/dev/null | grep -q '^Status: install ok installed'; then
        missing+=("$pkg")
        reasons+=("  $pkg: ${want[i + 1]}")
    fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

line="apt-get install -y ${missing[*]}"
echo "make $goal needs packages that are not installed:"
printf '%s\n' "${reasons[@]}"
if [ "$(id -u)" -ne 0 ]; then
    echo "Install them as root, then run make $goal again:"
    echo "  $line"
    exit 1
fi
echo "Installing them: $line"
export DEBIAN_FRONTEND=noninteractive
# a fresh system may have no package lists yet
apt-get update -qq
apt-get install -y -qq -o DPkg::Lock::Timeout=600 "${missing[@]}" >/dev/null
