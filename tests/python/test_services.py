"""proflink-otel with the real OpenTelemetry SDK in a threaded (Flask) and an asyncio (aiohttp,
and a plain ASGI app on uvicorn) service: what a profiler reads from outside while requests run, correlation datagrams sent the
profiler's way coming back on the exported root spans, and the same service without the
library. The service is fixture_app.py."""
import concurrent.futures
import json
import os
import subprocess
import sys
import time

import pytest

from conftest import (AGENT, ATTR, B64_A, B64_B, FIXTURE, ID_A, ID_B, send, socket_of, thread_view,
                      traced_threads, wait_until)

MODES = ["flask", "aiohttp", "uvicorn", "uvicorn-uvloop"]
LOOPS = ["aiohttp", "uvicorn", "aiohttp-uvloop", "uvicorn-uvloop"]


def get_all(svc, paths):
    """GETs in parallel threads; returns the futures."""
    ex = concurrent.futures.ThreadPoolExecutor(len(paths))
    futures = [ex.submit(svc.get, p, 60) for p in paths]
    ex.shutdown(wait=False)
    return futures


def ours(span):
    """The ids this test sent that a span carries (a profiler running on the machine may
    sample the service too and add its own)."""
    return [i for i in span["attributes"].get(ATTR, []) if i in (B64_A, B64_B)]


def roots_by_name(spans):
    return {s["name"]: s for s in spans if s["parentSpanId"] is None}


@pytest.mark.parametrize("mode", MODES + ["aiohttp-task-factory"])
def test_requests_published_on_their_thread_and_ids_on_exported_roots(services, sockdir, mode):
    if mode == "aiohttp-task-factory":  # the loop's task factory instead of instrument()
        if sys.version_info >= (3, 12):
            pytest.skip("aiohttp makes its handlers' tasks with asyncio.Task(eager_start=True) "
                        "from Python 3.12 on, not through the loop's task factory: nothing is "
                        "published on the loop's thread then (never a suspended task's span)")
        svc = services([FIXTURE, "aiohttp"], env={"PROFLINK_TEST_HOOK": "task_factory"})
    else:
        svc = services([FIXTURE, mode])
    sock = socket_of(sockdir, svc.pid)
    # the profiler registers with a long delay: sampled roots are held until /flush
    send(svc.pid, sock, "reg", 60000)
    svc.wait_stat("registrations", 1)
    # three concurrent requests, each stopping on CPU in its third round; on asyncio the others
    # are then suspended inside their own spans on the same thread
    futures = get_all(svc, [f"/req?id={i}&rounds=6&hold=3" for i in (1, 2, 3)])
    seen = {}
    for k in range(1, 4):
        holds = wait_until(f"{k} holds", lambda: len(svc.holds()) >= k and svc.holds(), 30)
        id_ = next(i for i in holds if i not in seen)
        trace, span, root, tid = holds[id_]
        seen[id_] = holds[id_]
        if mode != "flask":
            assert tid == svc.pid  # the event loop's thread
        # Elastic record: this request's trace, its "work" span, its root as the transaction;
        # OTel record: the trace and the root as local_root_span_id
        assert thread_view(svc.pid, tid) == ((trace, span, root), (trace, root))
        svc.release(id_)
    assert sorted(f.result() for f in futures) == ["done 1\n", "done 2\n", "done 3\n"]
    # nothing published once the work is done (flask: the request threads; asyncio: the loop)
    wait_until("no thread with a trace", lambda: traced_threads(svc.pid) == [])
    # an unsampled root is exported at once (not held) while the sampled ones still wait
    assert svc.get("/req?id=4&rounds=2&sampled=0") == "done 4\n"
    wait_until("request 4 exported", lambda: "request 4" in roots_by_name(svc.spans()))
    assert not {"request 1", "request 2", "request 3"} & set(roots_by_name(svc.spans()))
    # the profiler's samples: request 1 two stacks (3 and 2 samples), request 2 one, request 3
    # none; one sent under a child span's id (not a transaction) must land nowhere
    t1, _, r1, _ = seen["1"]
    t2, _, r2, _ = seen["2"]
    t3, s3, _, _ = seen["3"]
    send(svc.pid, sock, "corr", t1, r1, ID_A, 3)
    send(svc.pid, sock, "corr", t1, r1, ID_B, 2)
    send(svc.pid, sock, "corr", t2, r2, ID_A, 1)
    send(svc.pid, sock, "corr", t3, s3, ID_B, 7)
    svc.wait_stat("correlations", 4)
    assert svc.get("/flush") == "flushed\n"
    spans = svc.spans()
    by = roots_by_name(spans)
    assert sorted(by) == ["request 1", "request 2", "request 3", "request 4"]
    assert sorted(ours(by["request 1"])) == sorted([B64_A] * 3 + [B64_B] * 2)
    assert ours(by["request 2"]) == [B64_A]
    assert ours(by["request 3"]) == []
    assert ATTR not in by["request 4"]["attributes"] and not by["request 4"]["sampled"]
    children = [s for s in spans if s["parentSpanId"] is not None]
    assert len(children) == 4 and all(ATTR not in s["attributes"] for s in children)
    for s in children:  # each child under its own root
        parent = next(r for r in by.values() if r["spanId"] == s["parentSpanId"])
        assert parent["traceId"] == s["traceId"]


@pytest.mark.parametrize("mode", LOOPS)
def test_the_loop_thread_shows_nothing_between_callbacks(services, mode):
    """Between callbacks the loop thread is its own: nothing while idle, nothing while a task
    waits inside its span, and the span of the task whose step runs. (aiohttp's loop runs
    nothing once the request is suspended, until the next request: a hook that did not put
    back the loop's own context would leave the span there. uvicorn's server ticks every
    100 ms: the next callback would hide it.)"""
    svc = services([FIXTURE, mode])
    loop = svc.pid
    svc.get("/req?id=0&rounds=2")
    assert thread_view(svc.pid, loop) == (None, None)  # idle after a request
    suspended = get_all(svc, ["/suspend?id=1"])[0]
    trace1, span1, root1, tid = svc.wait_hold("1")
    assert tid == loop
    # the marker is written in the step that then suspends: once it has, the loop waits for I/O
    # with request 1 suspended inside its span, and shows nothing, for as long as it is idle
    wait_until("the loop idle, showing nothing",
               lambda: thread_view(svc.pid, loop) == (None, None))
    for _ in range(5):
        time.sleep(0.05)
        assert thread_view(svc.pid, loop) == (None, None)
    # another request's step on CPU: its own span, not the suspended one's
    running = get_all(svc, ["/req?id=2&rounds=3&hold=2"])[0]
    trace2, span2, root2, _ = svc.wait_hold("2")
    assert thread_view(svc.pid, loop) == ((trace2, span2, root2), (trace2, root2))
    svc.release("2")
    assert running.result() == "done 2\n"
    assert thread_view(svc.pid, loop) == (None, None)  # request 1 still suspended
    assert svc.get("/wake?id=1") == "set\n"
    assert suspended.result() == "woken 1\n"
    assert thread_view(svc.pid, loop) == (None, None)


@pytest.mark.parametrize("mode,hook", [("aiohttp-other-loop", "instrument"), ("aiohttp", "none")])
def test_a_loop_not_followed_shows_nothing_and_says_so_once(services, mode, hook):
    """An event loop whose task steps proflink-otel cannot follow (a loop class it does not
    know; asyncio's without instrument()): the loop thread publishes nothing, rather than a
    suspended task's span during another's step; one warning says why."""
    svc = services([FIXTURE, mode], env={"PROFLINK_TEST_HOOK": hook})
    futures = get_all(svc, [f"/req?id={i}&rounds=4&hold=3" for i in (1, 2)])
    for _ in (1, 2):
        holds = wait_until("a hold", lambda: svc.holds())
        id_ = next(iter(holds))
        trace, span, root, tid = holds[id_]
        assert tid == svc.pid and int(trace, 16)  # inside its span, on the loop's thread
        assert thread_view(svc.pid, tid) == (None, None)
        os.unlink(svc.marker)
        svc.release(id_)
    assert sorted(f.result() for f in futures) == ["done 1\n", "done 2\n"]
    # a thread-pool worker is no loop's: the request's span is shown there
    if hook == "instrument":
        fut = get_all(svc, ["/pool?id=3"])[0]
        trace, span, root, tid = svc.wait_hold("3a")
        assert thread_view(svc.pid, tid) == ((trace, root, root), (trace, root))
        svc.release("3a")
        svc.release("3b")
        assert fut.result() == f"pool 3 {tid}\n"
    warned = [line for line in open(svc.err) if "proflink-otel" in line]
    assert len(warned) == 1, warned
    assert ("OtherLoop" in warned[0]) if hook == "instrument" else ("instrument()" in warned[0])


# asyncio's loop only: uvloop 0.23 passes eager_start= to a task factory, which Python 3.13.0's
# eager_task_factory does not take (a TypeError with or without proflink-otel)
@pytest.mark.skipif(sys.version_info < (3, 12), reason="eager tasks are Python 3.12+")
@pytest.mark.parametrize("mode", ["aiohttp", "uvicorn"])
def test_an_eager_task_leaves_its_creator_its_own_span(services, mode):
    """An eager task's first step runs inside its creator's step; once it suspends inside its
    span, the creator goes on with its own span shown, not the task's."""
    svc = services([FIXTURE, mode], env={"PROFLINK_TEST_EAGER": "1"})
    fut = get_all(svc, ["/eager?id=1"])[0]
    trace, span, root, tid = svc.wait_hold("1")
    assert span == root and tid == svc.pid
    assert thread_view(svc.pid, tid) == ((trace, root, root), (trace, root))
    svc.release("1")
    assert fut.result() == "eager 1\n"
    assert thread_view(svc.pid, tid) == (None, None)


POOLS = [("flask", "ctx"), ("flask", "submit")] + [
    (m, how) for m in LOOPS for how in ("to_thread", "executor", "executor_ctx", "anyio")]


@pytest.mark.parametrize("mode,how", POOLS)
def test_thread_pool_work_publishes_the_context_it_runs_in(services, mode, how):
    """Work handed to a pool thread (with the request's context, or without: the function
    itself) shows the request's span while it runs, its own child span inside it, nothing
    after."""
    svc = services([FIXTURE, mode])
    fut = get_all(svc, [f"/pool?id=1&how={how}"])[0]
    plain = how in ("submit", "executor")  # the function itself, in the worker's own context
    trace, span, root, tid = svc.wait_hold("1a")
    assert tid != svc.pid
    seen_a = thread_view(svc.pid, tid)
    svc.release("1a")
    trace_b, span_b, root_b, tid_b = svc.wait_hold("1b")
    assert tid_b == tid and span_b != root
    seen_b = thread_view(svc.pid, tid)
    svc.release("1b")
    assert fut.result() == f"pool 1 {tid}\n"
    # the request's root on the worker (where the work runs in the worker's own context, OTel
    # has no span there: the exported root says which one it is)
    req = wait_until("the request's root exported",
                     lambda: roots_by_name(svc.spans()).get("pool 1"))
    assert (req["spanId"], req["traceId"]) == (root, trace if not plain else req["traceId"])
    if not plain:
        assert span == root
    t, r = req["traceId"], req["spanId"]
    assert seen_a == ((t, r, r), (t, r))
    if plain:
        # a span started by the function: a new trace's root, published as such
        assert trace_b != t
        assert seen_b == ((trace_b, span_b, span_b), (trace_b, span_b))
    else:
        # a child span started on the worker: published with the request's root as transaction
        assert (trace_b, root_b) == (t, r)
        assert seen_b == ((t, span_b, r), (t, r))
    # the worker lives on in the pool, without the request's trace
    wait_until("no thread with a trace", lambda: traced_threads(svc.pid) == [])


def normalized(spans):
    """What must not change between runs: name, kind, parent's name, attributes."""
    names = {s["spanId"]: s["name"] for s in spans}
    return sorted((s["name"], s["kind"], names.get(s["parentSpanId"]),
                   repr(sorted((k, v) for k, v in s["attributes"].items() if k != ATTR)))
                  for s in spans)


@pytest.mark.parametrize("mode", MODES)
def test_without_the_library_the_same_spans_minus_the_attribute(services, sockdir, mode):
    runs = {}
    for preload in (True, False):
        svc = services([FIXTURE, mode], preload=preload, name=f"preload-{preload}")
        if preload:
            sock = socket_of(sockdir, svc.pid)
            send(svc.pid, sock, "reg", 60000)
            svc.wait_stat("registrations", 1)
        else:
            assert svc.get("/stats") == "none\n"
        for h in ("3a", "3b"):
            svc.release(h)
        for p in ("/req?id=1&rounds=3", "/req?id=2&rounds=2&sampled=0", "/pool?id=3"):
            svc.get(p)
        if preload:
            # request 1's root is held; the profiler reports a stack for it
            work = next(s for s in svc.spans() if s["name"] == "work" and s["sampled"])
            send(svc.pid, sock, "corr", work["traceId"], work["parentSpanId"], ID_A, 2)
            svc.wait_stat("correlations", 1)
        svc.get("/flush")
        runs[preload] = svc.spans()
    assert ours(roots_by_name(runs[True])["request 1"]) == [B64_A, B64_A]
    assert normalized(runs[True]) == normalized(runs[False])
    assert len(runs[False]) == 6 and all(ATTR not in s["attributes"] for s in runs[False])


@pytest.mark.parametrize("mode", MODES)
def test_the_sdk_resource_is_the_otel_process_context(services, mode):
    from conftest import inspect
    svc = services([FIXTURE, mode])
    # published when the first span starts (span processors see the resource only then)
    assert inspect(svc.pid)["otel_process_context"]["resource"]["telemetry.sdk.language"] == "cpp"
    svc.get("/req?id=1&rounds=1")
    j = inspect(svc.pid)
    res = j["otel_process_context"]["resource"]
    assert res["service.instance.id"] == "fixture-instance-1"
    assert res["telemetry.sdk.language"] == "python"
    assert res["telemetry.sdk.name"] == "opentelemetry"
    assert j["storage"]["service_name"] == "python-fixture"



@pytest.mark.parametrize("mode", MODES)
def test_sampled_stacks_belong_to_the_request_whose_step_they_ran_in(services, tmp_path, mode):
    """Two requests interleave (on asyncio: 5 ms slices of each on one thread), one burning CPU
    in zlib, the other in OpenSSL's SHA-256; proflink-agent samples them from outside and reports
    each transaction's stacks: none of one request's stacks is in the other's native code."""
    if not os.path.exists(AGENT):
        pytest.skip("proflink-agent was not built (libunwind-dev)")
    svc = services([FIXTURE, mode])
    out = tmp_path / "agent.json"
    agent = subprocess.Popen([AGENT, "-d", "3", "-f", "50", "--json", "-o", str(out), str(svc.pid)],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    time.sleep(0.3)  # attached
    futures = get_all(svc, ["/burn?id=1&kind=zlib&ms=1000", "/burn?id=2&kind=sha&ms=1000"])
    assert sorted(f.result() for f in futures) == ["burnt 1\n", "burnt 2\n"]
    assert agent.wait(60) == 0, agent.stderr.read()
    svc.get("/flush")
    report = json.loads(out.read_text())
    roots = {(s["traceId"], s["spanId"]): s["name"] for s in svc.spans() if s["parentSpanId"] is None}
    # the frames of each kind of work (symbols, or library+offset where stripped)
    native = {"burn 1": ("libz.so", "deflate", "adler32"),
              "burn 2": ("libcrypto.so", "SHA256", "_hashlib", "EVP_")}

    def has(frames, marks):
        return any(m in f for f in frames for m in marks)

    seen = {name: 0 for name in native}
    for t in report["transactions"]:
        name = roots.get((t["trace_id"], t["transaction_id"]))
        assert name in native, ("a transaction that is no exported root", t)
        other = native["burn 2" if name == "burn 1" else "burn 1"]
        for sid, count in t["stack_trace_ids"].items():
            frames = report["stacks"][sid]["frames"]
            assert not has(frames, other), (name, frames)
            seen[name] += count if has(frames, native[name]) else 0
    assert all(n >= 5 for n in seen.values()), seen  # about 50 samples of each at 50 Hz
