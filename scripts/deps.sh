#!/usr/bin/env bash
# deps.sh GOAL — makes sure the Debian 12 packages GOAL needs are installed (GOAL: build, demo,
# check). Missing packages are named with the reason; as root they are installed with one
# `apt-get install` line, otherwise that line is printed and the exit status is 1. Nothing is
# installed when everything is present. dpkg and apt-get are found on PATH. For check, also the
# Node.js integration's npm packages, as locked (npm ci), where npm is installed: Node.js itself
# is not a Debian package the project asks for (tests/node.bats skips, saying why, without it);
# and the Python integration's virtualenv (integrations/python/venv.sh). DEPS_NODE_DIR and
# DEPS_PYTHON_VENV (that script) stand in for them in tests/deps.bats.
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
       nginx "real daemons, HTTP reading (Debian's nginx has the ssl module)" openssl "HTTPS tests: self-signed certificates" memcached "real daemons" curl "HTTP clients of the tests"
       passwd "useradd: a second user" git "system-wide tests" procps "pgrep: finding child processes"
       python3-venv "the Python integration's test virtualenv"
       maven "the Java agent extension's build and the pinned OpenTelemetry Java agent"
       openjdk-17-jdk-headless "the Java agent extension and the JVM tests"
       gunicorn "HTTP matrix" python3-uvicorn "HTTP matrix" python3-aiohttp "HTTP matrix"
       python3-fuse "a FUSE file system that logs FLUSH (host_safety tests)"
       libnghttp2-dev "the reference HPACK decoder (HTTP/2 tests)"
       debootstrap "a pristine Debian 12 for the package tests (system_deb)")

case $goal in
    build) want=("${build[@]}") ;;
    demo) want=("${demo[@]}") ;;
    check) want=("${check[@]}") ;;
    *) echo "usage: deps.sh build|demo|check" >&2; exit 2 ;;
esac

missing=() reasons=()
for ((i = 0; i < ${#want[@]}; i += 2)); do
    pkg=${want[i]}
    # dpkg -s also succeeds for removed-but-configured packages; the status says which. Read
    # whole, not piped into grep -q: under pipefail grep's early exit kills dpkg with SIGPIPE,
    # and an installed package then looked missing about half the time.
    status=$(dpkg -s "$pkg" 2>/dev/null || true)
    if [[ $'\n'$status$'\n' != *$'\nStatus: install ok installed\n'* ]]; then
        missing+=("$pkg")
        reasons+=("  $pkg: ${want[i + 1]}")
    fi
done
# npm ci GOAL — for check: integrations/node's packages as locked, unless they are already
# (npm writes node_modules/.package-lock.json on every install; the same bytes: nothing to do)
node_packages() {
    local dir=${DEPS_NODE_DIR:-$(cd "$(dirname "$0")/.." && pwd)/integrations/node}
    if [ "$goal" != check ] || [ ! -f "$dir/package-lock.json" ]; then return 0; fi
    if ! command -v npm >/dev/null; then
        echo "npm is not installed: tests/node.bats will skip (Node.js and npm come from the system)"
        return 0
    fi
    if [ -d "$dir/node_modules" ] && [ "$dir/node_modules/.package-lock.json" -nt "$dir/package-lock.json" ]; then
        return 0
    fi
    echo "Installing the Node.js integration's packages (npm ci in integrations/node)"
    (cd "$dir" && npm ci --no-audit --no-fund >/dev/null)
}

# for check: the Python integration's virtualenv (build/pyenv, exact versions from PyPI); it does
# nothing when its requirements did not change since it was made
python_env() {
    if [ "$goal" != check ]; then return 0; fi
    # PyPI out of reach: the rest of the suite still runs, and tests/python.bats skips saying so
    bash "${DEPS_PYTHON_VENV:-$(cd "$(dirname "$0")/.." && pwd)/integrations/python/venv.sh}" ||
        echo "the Python integration's virtualenv could not be made (is PyPI reachable?):" \
            "tests/python.bats will skip"
}

# for check: the gRPC servers and clients of the HTTP matrix (tests/grpc/install.sh: npm ci,
# grpcio in build/grpcenv); their shapes are left out where npm or PyPI is out of reach
grpc_packages() {
    # not where tests/deps.bats stands in for npm (DEPS_NODE_DIR)
    if [ "$goal" != check ] || [ -n "${DEPS_NODE_DIR:-}" ]; then return 0; fi
    bash "$(cd "$(dirname "$0")/.." && pwd)/tests/grpc/install.sh" ||
        echo "the gRPC test packages could not be installed: the matrix's grpc_* shapes are left out"
}

# for check: the pinned OpenTelemetry Java agent (integrations/java/fetch.sh, Maven Central;
# DEPS_JAVA_FETCH stands in for it in tests/deps.bats);
# nothing is fetched when build/java has it already
java_agent() {
    if [ "$goal" != check ] || ! command -v mvn >/dev/null; then return 0; fi
    bash "${DEPS_JAVA_FETCH:-$(cd "$(dirname "$0")/.." && pwd)/integrations/java/fetch.sh}" ||
        echo "the OpenTelemetry Java agent could not be fetched (is Maven Central reachable?):" \
            "tests/java.bats will skip"
}

if [ ${#missing[@]} -eq 0 ]; then
    node_packages
    python_env
    grpc_packages
    java_agent
    exit 0
fi

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
node_packages
python_env
grpc_packages
java_agent
