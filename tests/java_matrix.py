"""The HTTP matrix for a Java service under the OpenTelemetry Java agent with proflink's extension
(tests/java/JavaService.java: a JDK HttpServer on a pool of platform threads, or one virtual
thread per request). The agent traces each request from its own traceparent and the extension
publishes the request's span on the thread that runs it; no PROFLINK_HTTP. The sampler, the
clients and the classification are tests/http_matrix.py's: every thread's Elastic record read
from outside at 1 kHz, each sample during a request's work classed correct / wrong / missed
against the trace id the service parsed itself.

java_matrix.py --agent JAR --ext JAR [--java JAVA] [--mode pool|virtual] [--seconds S]
               [--json FILE] [--lib LIB] [INFLIGHT...]
Prints one line per load; the caller (tests/java.bats) asserts on the JSON."""
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import shutil

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import http_matrix as m  # noqa: E402

SERVICE = os.path.join(m.ROOT, "tests", "java", "JavaService.java")


def java_cmd(java, agent, ext, classes, mode, log):
    cmd = [java, "-javaagent:" + agent, "-Dotel.traces.exporter=none",
           "-Dotel.metrics.exporter=none", "-Dotel.logs.exporter=none"]
    if ext:
        cmd.append("-Dotel.javaagent.extensions=" + ext)
    return cmd + ["-cp", classes, "JavaService", log, mode]


def run(java, agent, ext, classes, mode, inflight, seconds, lib, tmp):
    log = os.path.join(tmp, "%s_%d.log" % (mode, inflight))
    samples = os.path.join(tmp, "%s_%d.samples" % (mode, inflight))
    env = dict(os.environ, LD_PRELOAD=lib, ELASTIC_OTEL_UNIVERSAL_PROFILING_INTEGRATION_SOCKET_DIR=tmp)
    srv = subprocess.Popen(java_cmd(java, agent, ext, classes, mode, log), env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = srv.stdout.readline()
        if not line.startswith("port "):
            raise SystemExit("%s: no port: %s %s" % (mode, line, srv.stderr.read()))
        port = int(line.split()[1])
        # warm-up, not sampled: the agent's classes are loaded and the JIT has compiled the
        # request path before the sampler starts (a cold JVM spends seconds in its compilers)
        errors = []
        warm = [threading.Thread(target=m.client, args=(port, "keepalive", 5,
                                                        time.monotonic() + 2.0, errors))
                for _ in range(inflight)]
        for c in warm:
            c.start()
        for c in warm:
            c.join()
        os.truncate(log, 0)
        off = m.tls_offset(srv.pid, env)
        sampler = subprocess.Popen([os.path.join(m.HELPERS, "http_sampler"), "1000", str(off),
                                    samples, str(srv.pid)])
        time.sleep(0.3)  # the sampler has read every thread pointer
        deadline = time.monotonic() + seconds
        clients = [threading.Thread(target=m.client, args=(port, "keepalive", 5, deadline, errors))
                   for _ in range(inflight)]
        for c in clients:
            c.start()
        for c in clients:
            c.join()
        sampler.send_signal(signal.SIGTERM)
        sampler.wait()
    finally:
        srv.kill()
        srv.wait()
    return m.classify(log, samples), errors


def main():
    args = sys.argv[1:]
    java, agent, ext, mode, seconds, out = "java", None, None, "pool", 3.0, None
    lib = os.path.join(m.ROOT, "build", "libproflink.so")
    loads = []
    while args:
        a = args.pop(0)
        if a == "--agent":
            agent = args.pop(0)
        elif a == "--ext":
            ext = args.pop(0)
        elif a == "--java":
            java = args.pop(0)
        elif a == "--mode":
            mode = args.pop(0)
        elif a == "--seconds":
            seconds = float(args.pop(0))
        elif a == "--json":
            out = args.pop(0)
        elif a == "--lib":
            lib = args.pop(0)
        else:
            loads.append(int(a))
    tmp = tempfile.mkdtemp(prefix="java_matrix.")
    results = []
    try:
        classes = os.path.join(tmp, "classes")
        # compiled once for Java 17 (the virtual executor is looked up by reflection)
        subprocess.run(["javac", "--release", "17", "-d", classes, SERVICE], check=True)
        print("%-8s %3s %6s %6s %8s %7s %7s" % ("mode", "in", "reqs", "samples", "correct%",
                                              "wrong%", "missed%"), flush=True)
        for n in loads or list(m.LOADS):
            r, errors = run(java, agent, ext, classes, mode, n, seconds, lib, tmp)
            total = r["correct"] + r["wrong"] + r["missed"]
            print("%-8s %3d %6d %6d %8.1f %7.1f %7.1f%s" % (
                mode, n, r["requests"], total, m.pct(r, "correct"), m.pct(r, "wrong"),
                m.pct(r, "missed"), "  client errors: %s" % errors[:1] if errors else ""),
                flush=True)
            results.append(dict(r, mode=mode, inflight=n, samples=total,
                                correct_pct=m.pct(r, "correct"), wrong_pct=m.pct(r, "wrong"),
                                missed_pct=m.pct(r, "missed"), client_errors=len(errors)))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if out:
        with open(out, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    import json
    main()
