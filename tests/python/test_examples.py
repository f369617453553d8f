"""The examples of integrations/python/example as a new user runs them: under proflink-run,
sampled by proflink-agent (which sends the profiler's correlation messages), the exported root
spans carry the ids of the agent's report; without the library they behave the same."""
import json
import os
import subprocess
import sys
import threading
import time
from collections import Counter

import pytest

from conftest import AGENT, ATTR, EXAMPLES, ROOT, wait_until

APPS = ["flask_app.py", "aiohttp_app.py"]


def roots(svc):
    return [s for s in svc.spans() if s["parentSpanId"] is None]


@pytest.mark.parametrize("app", APPS)
def test_readme_recipe_agent_ids_on_exported_roots(services, tmp_path, app):
    if not os.path.exists(AGENT):
        pytest.skip("proflink-agent was not built (libunwind-dev)")
    svc = services([os.path.join(EXAMPLES, app)], preload=False, env={"PORT": "0"},
                   command=[os.path.join(ROOT, "scripts", "proflink-run"), "--service", "checkout",
                            "--", sys.executable])
    out = tmp_path / "agent.json"
    agent = subprocess.Popen([AGENT, "-d", "3", "--register", "500", "--json", "-o", str(out),
                              str(svc.pid)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    # two clients for as long as the agent samples (bounded): on asyncio their requests
    # interleave on the loop's thread
    n = [0]

    def client():
        while agent.poll() is None and n[0] < 60:
            assert json.loads(svc.get("/work?ms=120"))["ms"] == 120
            n[0] += 1

    clients = [threading.Thread(target=client) for _ in range(2)]
    for c in clients:
        c.start()
    for c in clients:
        c.join()
    assert agent.wait(60) == 0, agent.stderr.read()
    report = json.loads(out.read_text())
    # the last transactions are delivered samples-delay-ms (500) after they ended
    wait_until(f"{n[0]} roots exported", lambda: len(roots(svc)) >= n[0], 15)
    by_id = {(s["traceId"], s["spanId"]): s for s in roots(svc)}
    assert report["dropped"] == 0 and report["sent"] > 0
    matched = 0
    for t in report["transactions"]:
        root = by_id.get((t["trace_id"], t["transaction_id"]))
        assert root is not None, ("the agent saw a transaction that is no exported root", t)
        got = Counter(i for i in root["attributes"].get(ATTR, []))
        sent = Counter(t["stack_trace_ids"])
        # a profiler running on the machine may add its own ids; the agent's are all there
        assert not sent - got, (got, t)
        matched += 1
    assert matched >= 4, matched
    for s in svc.spans():
        if s["parentSpanId"] is not None:
            assert ATTR not in s["attributes"], s


def run_example(services, app, preload):
    svc = services([os.path.join(EXAMPLES, app)], preload=preload, env={"PORT": "0"},
                   name=f"{app}-{preload}")
    resp = []
    for path in ("/work?ms=12", "/work?ms=3", "/nope", "/work?ms=0"):
        try:
            resp.append(svc.get(path))
        except Exception as e:  # the 404
            resp.append(str(e))
    # every root ended (delivered at once while no profiler spoke: proflink is in auto mode; a
    # profiler sampling the machine makes it hold them for its delay)
    wait_until("4 roots", lambda: len(roots(svc)) == 4, 20)
    names = {s["spanId"]: s["name"] for s in svc.spans()}
    # the attribute is what may differ: that profiler's ids
    spans = sorted((s["name"], s["kind"], names.get(s["parentSpanId"]),
                    json.dumps({k: v for k, v in s["attributes"].items() if k != ATTR},
                               sort_keys=True)) for s in svc.spans())
    return resp, spans, [s for s in svc.spans() if ATTR in s["attributes"]]


@pytest.mark.parametrize("app", APPS)
def test_example_the_same_without_the_library(services, app):
    plain = run_example(services, app, False)
    preload = run_example(services, app, True)
    assert plain[:2] == preload[:2]
    assert plain[2] == []  # without the library no span carries the attribute
    assert len(plain[1]) == 10 and '"slices": 3' in plain[0][0].replace('":3', '": 3')
