#!/usr/bin/env bash
# Creates (or refreshes) the virtualenv of proflink-otel's tests and benches, build/pyenv, with
# Debian's python3 (and build/pyenv-3.13 with a python3.13, where there is one) and the exact
# packages of requirements-test.txt from PyPI, and installs the package itself (editable: the
# tests always run the tree's code). Nothing is done when the requirements and pyproject.toml
# did not change since the last run. Used by .ci/run; by hand: bash this file.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
venv=$root/build/pyenv
py=/usr/bin/python3
[ -x "$py" ] || py=$(command -v python3)
if ! "$py" -c 'import ensurepip, venv' 2>/dev/null; then
    if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; then
        echo "proflink-otel: installing python3-venv (the tests' virtualenv needs it)"
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null
    else
        echo "proflink-otel: python3-venv is missing: apt-get install python3-venv" >&2
        exit 1
    fi
fi
# make_venv PYTHON DIR: the virtualenv, unless the requirements and the package's metadata (entry
# points) are as installed last time
make_venv() {
    local stamp=$2/.installed
    if [ -x "$2/bin/python" ] && cat "$here/requirements-test.txt" "$here/pyproject.toml" | cmp -s - "$stamp"; then
        return 0
    fi
    "$1" -m venv "$2"
    "$2/bin/pip" install -q --disable-pip-version-check -r "$here/requirements-test.txt"
    "$2/bin/pip" install -q --disable-pip-version-check --no-deps --no-build-isolation -e "$here"
    cat "$here/requirements-test.txt" "$here/pyproject.toml" >"$stamp"
}
make_venv "$py" "$venv"
# A second Python version for tests/python.bats, where one is installed (Debian 13's python3.13,
# or pyenv's): build/pyenv-3.13
py13=$(command -v python3.13 || true)
if [ -z "$py13" ] || ! "$py13" -c 'import ensurepip, venv' 2>/dev/null; then
    py13=
    if command -v pyenv >/dev/null; then
        py13=$(find "$(pyenv root)/versions" -maxdepth 3 -path '*/3.13*/bin/python3.13' 2>/dev/null | sort | tail -1)
    fi
fi
if [ -n "$py13" ]; then
    make_venv "$py13" "$root/build/pyenv-3.13"
else
    echo "proflink-otel: no python3.13 here: the tests run with $("$py" --version) only"
fi
