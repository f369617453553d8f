#!/usr/bin/env bats
# The dependency check behind `make demo` / `make check` (scripts/deps.sh): dpkg and apt-get are
# replaced on PATH by shims that report the packages in $FAKE_MISSING as not installed and log
# what apt-get was asked to do, so the real system is never changed.
# shellcheck shell=bash
load helpers
bats_require_minimum_version 1.5.0

setup() {
    # under /tmp, not the test's private directory, so that the unprivileged runs can use it
    SHIM=$(mktemp -d /tmp/plt_deps.XXXXXX)
    chmod 755 "$SHIM"
    APT_LOG=$SHIM/apt.log
    : >"$APT_LOG"
    chmod 666 "$APT_LOG"
    cat >"$SHIM/dpkg" <<'SH'
#!/bin/sh
# dpkg -s PKG: "not installed" for the packages named in FAKE_MISSING
for m in $FAKE_MISSING; do [ "$2" = "$m" ] && { echo "dpkg-query: package '$2' is not installed" >&2; exit 1; }; done
printf 'Package: %s\nStatus: install ok installed\n' "$2"
SH
    cat >"$SHIM/apt-get" <<SH
#!/bin/sh
echo "\$*" >>"$APT_LOG"
SH
    # npm: logs what it was asked (in the directory it ran in) and installs as npm ci would
    cat >"$SHIM/npm" <<SH
#!/bin/sh
echo "npm \$* in \$PWD" >>"$APT_LOG"
mkdir -p node_modules && cp package-lock.json node_modules/.package-lock.json
SH
    # the Python integration's virtualenv: made already (the real one needs PyPI)
    printf '#!/bin/sh\n' >"$SHIM/venv.sh"
    export DEPS_PYTHON_VENV=$SHIM/venv.sh
    # the pinned Java agent: fetched already (the real one needs Maven Central)
    printf '#!/bin/sh\n' >"$SHIM/java_fetch.sh"
    export DEPS_JAVA_FETCH=$SHIM/java_fetch.sh
    chmod 755 "$SHIM/dpkg" "$SHIM/apt-get" "$SHIM/npm"
    export PATH=$SHIM:$PATH
    # the Node.js integration's directory, its packages installed as locked
    export DEPS_NODE_DIR=$SHIM/node
    mkdir -p "$DEPS_NODE_DIR/node_modules"
    echo '{}' >"$DEPS_NODE_DIR/package-lock.json"
    touch -d '1 minute ago' "$DEPS_NODE_DIR/package-lock.json"
    cp "$DEPS_NODE_DIR/package-lock.json" "$DEPS_NODE_DIR/node_modules/.package-lock.json"
}

teardown() { rm -rf "$SHIM"; }

@test "deps: everything present, nothing is installed and nothing printed" {
    FAKE_MISSING='' run bash "$ROOT/scripts/deps.sh" check
    [ "$status" -eq 0 ]
    [ -z "$output" ]
    [ ! -s "$APT_LOG" ]
}

@test "deps: as root, one apt-get install line for exactly what is missing, with the reason" {
    FAKE_MISSING="libunwind-dev python3" run bash "$ROOT/scripts/deps.sh" demo
    [ "$status" -eq 0 ]
    [[ "$output" == *"libunwind-dev: proflink-agent unwinds stacks"* ]]
    [[ "$output" == *"python3: "* ]]
    [[ "$output" == *"apt-get install -y libunwind-dev python3"* ]]
    [ "$(sed -n 1p "$APT_LOG")" = "update -qq" ]
    [ "$(sed -n 2p "$APT_LOG")" = "install -y -qq -o DPkg::Lock::Timeout=600 libunwind-dev python3" ]
    [ "$(wc -l <"$APT_LOG")" -eq 2 ]
}

@test "deps: only the goal's packages count (bats is not needed for the demo)" {
    FAKE_MISSING=bats run bash "$ROOT/scripts/deps.sh" demo
    [ "$status" -eq 0 ]
    [ ! -s "$APT_LOG" ]
    FAKE_MISSING=bats run bash "$ROOT/scripts/deps.sh" check
    [[ "$output" == *"apt-get install -y bats"* ]]
}

# in_checkout_as_nobody — goes to the checkout, which uid 65534 is to use by relative paths: a
# checkout in root's home (mode 700) is out of its reach by its absolute path
in_checkout_as_nobody() {
    cd "$ROOT" || return 1
    setpriv --reuid=65534 --regid=65534 --clear-groups test -r Makefile ||
        skip "the checkout itself is not readable by uid 65534"
}

@test "deps: not root and something missing, the exact line is printed and nothing installed" {
    in_checkout_as_nobody
    run setpriv --reuid=65534 --regid=65534 --clear-groups \
        env PATH="$PATH" FAKE_MISSING=libunwind-dev bash scripts/deps.sh demo
    [ "$status" -eq 1 ]
    [[ "$output" == *"  apt-get install -y libunwind-dev"* ]]
    [[ "$output" == *"as root"* ]]
    [ ! -s "$APT_LOG" ]
}

@test "deps: make demo stops before building when a package is missing and it cannot install" {
    in_checkout_as_nobody
    run setpriv --reuid=65534 --regid=65534 --clear-groups \
        env PATH="$PATH" FAKE_MISSING=libunwind-dev make -s --no-print-directory demo
    [ "$status" -ne 0 ]
    [[ "$output" == *"apt-get install -y libunwind-dev"* ]]
    [[ "$output" != *"=== 1."* ]]
}

@test "deps: make without libunwind builds the library and skips the agent with one line" {
    # a compiler that sees no system headers stands for a machine without libunwind-dev
    run make -n -C "$ROOT" --no-print-directory all CC="gcc -nostdinc"
    [ "$status" -eq 0 ]
    [ "$(grep -c 'proflink-agent skipped: libunwind-dev is not installed' <<<"$output")" -eq 1 ]
    run ! grep -q -- '-o build/proflink-agent' <<<"$output"
    run make -n -B -C "$ROOT" --no-print-directory all
    grep -q -- '-o build/proflink-agent' <<<"$output"
}

@test "deps: a dpkg that is cut off after its status line (SIGPIPE under pipefail) still counts" {
    # dpkg -s goes on writing after the status line; a reader that stops early gets it killed
    cat >"$SHIM/dpkg" <<'SH'
#!/bin/sh
printf 'Package: %s\nStatus: install ok installed\n' "$2"
i=0
while [ $i -lt 2000 ]; do echo "Description: a long package description line $i"; i=$((i + 1)); done
SH
    for _ in 1 2 3 4 5; do
        run bash "$ROOT/scripts/deps.sh" check
        [ "$status" -eq 0 ]
        [ -z "$output" ]
    done
    [ ! -s "$APT_LOG" ]
}

@test "deps: check installs the Node.js integration's packages with npm ci, once" {
    rm -rf "$DEPS_NODE_DIR/node_modules"
    FAKE_MISSING='' run bash "$ROOT/scripts/deps.sh" check
    [ "$status" -eq 0 ]
    [[ "$output" == *"npm ci in integrations/node"* ]]
    [ "$(cat "$APT_LOG")" = "npm ci --no-audit --no-fund in $DEPS_NODE_DIR" ]
    # installed as locked now: nothing more to do
    : >"$APT_LOG"
    FAKE_MISSING='' run bash "$ROOT/scripts/deps.sh" check
    [ -z "$output" ]
    [ ! -s "$APT_LOG" ]
    # demo does not need them
    rm -rf "$DEPS_NODE_DIR/node_modules"
    FAKE_MISSING='' run bash "$ROOT/scripts/deps.sh" demo
    [ ! -s "$APT_LOG" ]
}

@test "deps: check goes on when the Python virtualenv cannot be made, and says which suite skips" {
    printf '#!/bin/sh\necho "pip: no connection" >&2\nexit 1\n' >"$DEPS_PYTHON_VENV"
    FAKE_MISSING='' run bash "$ROOT/scripts/deps.sh" check
    [ "$status" -eq 0 ]
    [[ "$output" == *"pip: no connection"* ]]
    [[ "$output" == *"virtualenv could not be made (is PyPI reachable?): tests/python.bats will skip"* ]]
}
