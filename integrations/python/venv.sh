#!/usr/bin/env bash
# Creates (or refreshes) the virtualenv of proflink-otel's tests and benches, build/pyenv, with
# Debian's python3 and the exact packages of requirements-test.txt from PyPI, and installs the
# package itself (editable: the tests always run the tree's code). Nothing is done when the
# requirements and pyproject.toml did not change since the last run. Used by .ci/run; by hand: bash this file.
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
# the requirements and the package's metadata (entry points) as installed last time
stamp=$venv/.installed
if [ -x "$venv/bin/python" ] && cat "$here/requirements-test.txt" "$here/pyproject.toml" | cmp -s - "$stamp"; then
    exit 0
fi
"$py" -m venv "$venv"
"$venv/bin/pip" install -q --disable-pip-version-check -r "$here/requirements-test.txt"
"$venv/bin/pip" install -q --disable-pip-version-check --no-deps --no-build-isolation -e "$here"
cat "$here/requirements-test.txt" "$here/pyproject.toml" >"$stamp"
