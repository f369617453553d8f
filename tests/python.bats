#!/usr/bin/env bats
# shellcheck shell=bash
# The Python integration (integrations/python, proflink-otel) with the real OpenTelemetry Python
# SDK from PyPI: the pytest suite of tests/python, one bats test per pytest test function (all of
# its parameters) so that tests/run.sh counts them. pytest runs in build/pyenv, the virtualenv of
# integrations/python/venv.sh (exact versions of integrations/python/requirements-test.txt).
load helpers

VENV=$ROOT/build/pyenv

setup() {
    if ! [ -x "$VENV/bin/python" ] ||
        ! "$VENV/bin/python" -c 'import pytest, opentelemetry.sdk, flask, aiohttp, fastapi, uvloop, gevent, django, proflink_otel'; then
        skip "the virtualenv build/pyenv is missing or incomplete: run integrations/python/venv.sh (make check and .ci/run do; it needs PyPI)"
    fi
}

# pyt FILE::TEST [VENV] — that pytest test (every parameter of it) in VENV (build/pyenv by
# default); its report is bats' diagnostics.
pyt() {
    PYTHONDONTWRITEBYTECODE=1 "${2:-$VENV}/bin/python" -m pytest -q -p no:cacheprovider \
        "$ROOT/tests/python/$1" 3>&-
}

# the second Python version's virtualenv (integrations/python/venv.sh makes it where a
# python3.13 is installed)
VENV13=$ROOT/build/pyenv-3.13
need_venv13() {
    if ! [ -x "$VENV13/bin/python" ] || ! [ -e "$VENV13/.installed" ]; then
        skip "no build/pyenv-3.13: integrations/python/venv.sh makes it where a python3.13 is installed"
    fi
}

@test "python: each request's ids on its thread from outside (Flask threads, aiohttp and uvicorn task steps on asyncio and uvloop, task factory); profiler ids on exported roots only" {
    pyt test_services.py::test_requests_published_on_their_thread_and_ids_on_exported_roots
}

@test "python: proflink-agent's samples of interleaved requests (zlib vs SHA-256 work) never land on the other request" {
    pyt test_services.py::test_sampled_stacks_belong_to_the_request_whose_step_they_ran_in
}

@test "python: thread-pool work (asyncio.to_thread, run_in_executor with and without ctx.run, anyio.to_thread, executor.submit) shows the request's span, nothing after" {
    pyt test_services.py::test_thread_pool_work_publishes_the_context_it_runs_in
}

@test "python: the loop thread between callbacks shows nothing (idle, a task suspended in its span), asyncio and uvloop" {
    pyt test_services.py::test_the_loop_thread_shows_nothing_between_callbacks
}

@test "python: an event loop proflink-otel cannot follow (or asyncio without instrument()) publishes nothing, one warning" {
    pyt test_services.py::test_a_loop_not_followed_shows_nothing_and_says_so_once
}

# Python as deployed (tests/python/matrix_apps.py through tests/http_matrix.py): each request's
# CPU chunks logged by the service with the trace id it parsed, every thread sampled from outside
# at 1 kHz, PROFLINK_HTTP=0 (the integration alone). Table printed per shape and load.
PY_MATRIX=(otel_fastapi_async_asyncio otel_fastapi_async_uvloop otel_fastapi_def_asyncio
           otel_fastapi_def_uvloop otel_aiohttp otel_gevent otel_gunicorn_uvicorn otel_django_wsgi
           otel_django_asgi)

@test "python: attribution matrix (FastAPI async/def on asyncio and uvloop, aiohttp, gevent, gunicorn+uvicorn, Django) at 1/4/16 in flight: wrong <= 1%, correct >= 95% (1) / 90% (4, 16)" {
    "$VENV/bin/python" "$ROOT/tests/http_matrix.py" --seconds 2 --json "$BATS_TEST_TMPDIR/m.json" \
        "${PY_MATRIX[@]}" >"$BATS_TEST_TMPDIR/table" 3>&-
    sed 's/^/# /' "$BATS_TEST_TMPDIR/table" >&3
    run "$VENV/bin/python" - "$BATS_TEST_TMPDIR/m.json" "${#PY_MATRIX[@]}" <<'PYEOF'
import json, sys
rows, shapes = json.load(open(sys.argv[1])), int(sys.argv[2])
bad = [] if len(rows) == 3 * shapes else ["%d cells of %d" % (len(rows), 3 * shapes)]
for r in rows:
    key = "%s:%d" % (r["shape"], r["inflight"])
    if r["client_errors"] or r["samples"] < 30:
        bad.append("%s: %d samples, %d client errors" % (key, r["samples"], r["client_errors"]))
    if r["wrong_pct"] > 1.0:
        bad.append("%s: %.1f%% wrong" % (key, r["wrong_pct"]))
    want = 95 if r["inflight"] == 1 else 90
    if r["correct_pct"] < want:
        bad.append("%s: %.1f%% correct, want >= %d" % (key, r["correct_pct"], want))
print("\n".join(bad))
sys.exit(1 if bad else 0)
PYEOF
    echo "$output"
    [ "$status" -eq 0 ]
}

@test "python: eager tasks (3.12+, on Python 3.13): the creator's span back once the task's first step suspends" {
    need_venv13
    pyt test_services.py::test_an_eager_task_leaves_its_creator_its_own_span "$VENV13"
}

@test "python 3.13: every service test (threads, asyncio and uvloop steps, the loop between callbacks, thread handoffs, loops not followed, resource, agent)" {
    need_venv13
    pyt test_services.py "$VENV13"
}

@test "python: without the library the same spans minus the attribute" {
    pyt test_services.py::test_without_the_library_the_same_spans_minus_the_attribute
}

@test "python: the SDK's resource is the OTel process context's (service.instance.id, telemetry.sdk.*)" {
    pyt test_services.py::test_the_sdk_resource_is_the_otel_process_context
}

@test "python: the docs/api.md recipe: the examples under proflink-run, sampled by proflink-agent, export the agent's ids" {
    pyt test_examples.py::test_readme_recipe_agent_ids_on_exported_roots
}

@test "python: the examples behave the same with and without the library" {
    pyt test_examples.py::test_example_the_same_without_the_library
}

@test "python: a pure-Python wheel whose opentelemetry_context entry point the SDK loads" {
    pyt test_package.py::test_a_pure_python_wheel_whose_entry_point_the_sdk_loads
}

@test "python: transparent without the library or when it is disabled" {
    pyt test_package.py::test_transparent_without_the_library_or_when_disabled
}

@test "python: every pytest test function is run by a test of this file" {
    run "$VENV/bin/python" -m pytest -q --collect-only -p no:cacheprovider "$ROOT/tests/python"
    [ "$status" -eq 0 ]
    local fn missing=()
    for fn in $(echo "$output" | sed -n 's/^tests\/python\/\([^[]*\).*/\1/p' | sort -u); do
        grep -qF "pyt $fn" "$BATS_TEST_FILENAME" || missing+=("$fn")
    done
    echo "not run: ${missing[*]}"
    [ ${#missing[@]} -eq 0 ]
}
