"""Shared by the tests of proflink-otel (tests/python): where the built artifacts are, a test
service started under the library (or without it) on a kernel-picked port, and the profiler's
view of it from outside (proflink-inspect reads the thread records through /proc/PID/mem;
send_datagrams talks to its socket the way the profiler does)."""
import glob
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.path.join(ROOT, "build")
LIB = os.path.join(BUILD, f"elastic-jvmti-linux-proflink-{platform.machine()}.so")
INSPECT = os.path.join(BUILD, "proflink-inspect")
AGENT = os.path.join(BUILD, "proflink-agent")
SENDER = os.path.join(BUILD, "tests", "send_datagrams")
FIXTURE = os.path.join(os.path.dirname(__file__), "fixture_app.py")
EXAMPLES = os.path.join(ROOT, "integrations", "python", "example")
ATTR = "elastic.profiler_stack_trace_ids"
# the spec's example stack-trace id and another, raw (hex) and as sent on spans (base64url)
ID_A, B64_A = "60b420bb3851d9d47acb933dbe70399b", "YLQguzhR2dR6y5M9vnA5mw"
ID_B, B64_B = "4c9326bb9805fa8f85882c12eae724ce", "TJMmu5gF-o-FiCwS6uckzg"


def wait_until(what, check, timeout=10.0):
    """check() until it returns something true (returned), else fails saying what."""
    end = time.monotonic() + timeout
    while True:
        v = check()
        if v:
            return v
        if time.monotonic() > end:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.05)


def read_lines(path):
    try:
        with open(path) as f:
            return f.read().splitlines()
    except FileNotFoundError:
        return []


class Service:
    """A Python service in the background: `argv` run by this virtualenv's interpreter."""

    def __init__(self, workdir, argv, preload=True, env=None, command=None):
        self.dir = workdir
        os.makedirs(os.path.join(workdir, "release"), exist_ok=True)
        self.export = os.path.join(workdir, "export.jsonl")
        self.marker = os.path.join(workdir, "marker")
        self.err = os.path.join(workdir, "server.err")
        e = dict(os.environ, EXPORT_FILE=self.export, MARKER_FILE=self.marker,
                 RELEASE_DIR=os.path.join(workdir, "release"), PYTHONUNBUFFERED="1",
                 OTEL_PYTHON_CONTEXT="proflink")
        e.pop("LD_PRELOAD", None)
        if preload:
            e["LD_PRELOAD"] = LIB
        e.update(env or {})
        self.proc = subprocess.Popen((command or [sys.executable]) + argv, env=e, stdin=subprocess.DEVNULL,
                                     stdout=open(os.path.join(workdir, "server.out"), "w"),
                                     stderr=open(self.err, "w"))
        m = re.search(r":(\d+) \(pid (\d+)\)", wait_until("the service to listen", self._listening, 30))
        self.port, self.pid = int(m.group(1)), int(m.group(2))

    def _listening(self):
        if self.proc.poll() is not None:
            pytest.fail(f"service exited {self.proc.returncode}: " + open(self.err).read()[-2000:])
        for line in read_lines(self.err):
            if line.startswith("listening "):
                return line
        return None

    def get(self, path, timeout=30):
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}{path}", timeout=timeout) as r:
            return r.read().decode()

    def stats(self):
        words = self.get("/stats").split()
        return {k: int(v) for k, v in (w.split("=") for w in words if "=" in w)}

    def wait_stat(self, key, n):
        wait_until(f"stat {key} >= {n}", lambda: self.stats().get(key, 0) >= n)

    def spans(self):
        return [json.loads(line) for line in read_lines(self.export)]

    def holds(self):
        """The marker lines: {id: (trace, span, root, tid)}."""
        out = {}
        for line in read_lines(self.marker):
            w = line.split()
            if w[0] == "hold":
                out[w[1]] = (w[2], w[3], w[4], int(w[5]))
        return out

    def wait_hold(self, id_):
        return wait_until(f"request {id_} to hold", lambda: self.holds().get(str(id_)), 30)

    def release(self, id_):
        open(os.path.join(self.dir, "release", str(id_)), "w").close()

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def inspect(pid):
    """proflink-inspect --json: what a profiler reads from outside."""
    r = subprocess.run([INSPECT, "--json", str(pid)], capture_output=True, text=True, timeout=30)
    assert r.stdout, r.stderr
    return json.loads(r.stdout)


def thread_view(pid, tid):
    """The thread's records as the profiler reads them: (trace, span, transaction) of the
    Elastic record and (trace, local_root_span_id) of the OTel one; None where no trace."""
    for t in inspect(pid)["threads"]:
        if t["tid"] == tid:
            apm, otel = t.get("apm") or {}, t.get("otel") or {}
            a = (apm["trace_id"], apm["span_id"], apm["transaction_id"]) if apm.get("trace_present") else None
            o = (otel["trace_id"], (otel.get("attributes") or {}).get("local_root_span_id")) \
                if otel.get("valid") and int(otel["trace_id"], 16) else None
            return a, o
    raise AssertionError(f"no thread {tid} in {pid}")


def traced_threads(pid):
    """The tids whose Elastic record carries a trace."""
    return [t["tid"] for t in inspect(pid)["threads"] if (t.get("apm") or {}).get("trace_present")]


@pytest.fixture
def sockdir():
    """Each test its own socket directory (short: the socket path must stay within 85 bytes)."""
    d = tempfile.mkdtemp(prefix="plt.", dir="/tmp")
    old = os.environ.get("ELASTIC_OTEL_UNIVERSAL_PROFILING_INTEGRATION_SOCKET_DIR")
    os.environ["ELASTIC_OTEL_UNIVERSAL_PROFILING_INTEGRATION_SOCKET_DIR"] = d
    yield d
    if old is None:
        os.environ.pop("ELASTIC_OTEL_UNIVERSAL_PROFILING_INTEGRATION_SOCKET_DIR")
    else:
        os.environ["ELASTIC_OTEL_UNIVERSAL_PROFILING_INTEGRATION_SOCKET_DIR"] = old
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def services(tmp_path, sockdir):
    """start(argv, preload=True, env=None, name=None, command=None) -> Service (command: what
    runs argv, this interpreter by default); all are stopped after the test."""
    started = []

    def start(argv, preload=True, env=None, name=None, command=None):
        d = os.path.join(tmp_path, name or f"s{len(started)}")
        os.makedirs(d, exist_ok=True)
        s = Service(d, argv, preload, env, command)
        started.append(s)
        return s

    yield start
    for s in started:
        s.stop()


def socket_of(sockdir, pid):
    return wait_until(f"the socket of {pid}",
                      lambda: (glob.glob(os.path.join(sockdir, f"proflink-{pid}-*.sock")) or [None])[0])


def send(pid, sock, *args):
    """send_datagrams: correlation / registration datagrams the profiler's way."""
    subprocess.run([SENDER, str(pid), sock] + [str(a) for a in args], check=True,
                   capture_output=True, timeout=60)


def pytest_configure(config):
    for path in (LIB, INSPECT, SENDER):
        if not os.path.exists(path):
            raise pytest.UsageError(f"{path} is missing: make all test-helpers first")
