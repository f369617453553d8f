#!/usr/bin/env bash
# install.sh — the gRPC servers and clients of the HTTP matrix (tests/http_matrix.py): the npm
# packages of tests/grpc as locked (npm ci: @grpc/grpc-js) and a virtualenv build/grpcenv with
# grpcio at the version of tests/grpc/requirements.txt (PyPI). Each does nothing when already
# there; where npm or PyPI is out of reach the grpc_* shapes are left out, said by the matrix.
set -euo pipefail
dir=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$dir/../.." && pwd)

if command -v npm >/dev/null; then
    if [ ! -d "$dir/node_modules" ] || [ "$dir/package-lock.json" -nt "$dir/node_modules/.package-lock.json" ]; then
        echo "Installing the gRPC test packages (npm ci in tests/grpc)"
        (cd "$dir" && npm ci --no-audit --no-fund >/dev/null)
    fi
else
    echo "npm is not installed: the matrix's Node gRPC shapes are left out"
fi

env=$root/build/grpcenv
stamp=$env/requirements.txt
if [ ! -f "$stamp" ] || ! cmp -s "$stamp" "$dir/requirements.txt"; then
    echo "Making build/grpcenv (grpcio from PyPI)"
    rm -rf "$env"
    python3 -m venv "$env"
    "$env/bin/pip" install -q -r "$dir/requirements.txt"
    cp "$dir/requirements.txt" "$stamp"
fi
