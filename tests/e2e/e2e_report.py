"""Summaries of what the real profiler did, for the end-to-end suite (JSON on stdout).

e2e_report.py samples FILE PID...
    The exported samples of those processes (FILE: the receiver's JSON lines): total events,
    linked ones, per link "TRACE/SPAN", per thread id ("tid": {"TRACE/SPAN" or "-": n}) and
    per thread name.
e2e_report.py log FILE PID
    What the profiler logged (-v) about PID: its attach line (service name and socket), how many
    correlation datagrams it reported sending ("Reporting Nx trace hash ... -> TX ... for PID"),
    per transaction, how many of those sends failed, and what was sent per transaction (the failure line follows the report
    line of the datagram it belongs to, both written by the one goroutine that handles traces).
e2e_report.py unlinked SAMPLES LOG PID
    PID's exported samples without a link: how many, and how many of those were taken after
    the profiler logged attaching to PID (plus MARGIN_MS, its own processing): the profiler
    reads a process's records only once attached, at its first samples; each of those with its
    thread and time ("after_attach_samples"). Samples of proflink's own threads (a thread id
    ever named proflink-*) and of the tests' stats-probe thread (they work for no trace), those
    of a thread still under its creator's name (its start, before proflink's start wrapper set
    its record), and one sample per thread after its last linked one (its end, after proflink's
    exit-key destructor unpublished its record) are counted apart.
e2e_report.py fifo FILE PID
    The correlation records proflink wrote to its PROFLINK_FIFO for PID: total count, per
    transaction.
e2e_report.py deferral FILE PID
    Per transaction of PID, from its PROFLINK_FIFO records in the order proflink's reader wrote
    them (correlations as they arrive, transactions when released): the stack-trace ids that
    arrived before the transaction was delivered ("before"), those in the delivered record
    ("delivered") and those that arrived after it ("late"), and whether it was delivered before
    the first correlation of the process arrived ("unheld": in `auto` mode proflink holds ended
    transactions only once a profiler has shown up; before, it delivers them at once).
"""
import collections
import json
import re
import sys


def samples(path, pids):
    pids = {int(p) for p in pids}
    out = {"samples": 0, "linked": 0, "links": collections.Counter(),
           "threads": collections.defaultdict(collections.Counter),
           "names": collections.defaultdict(collections.Counter), "pids": collections.Counter()}
    with open(path) as f:
        for line in f:
            r = json.loads(line)
            if r["pid"] not in pids or r.get("type") != "samples":
                continue
            n = r["count"]
            link = "%s/%s" % (r["trace_id"], r["span_id"]) if r.get("trace_id") else "-"
            out["samples"] += n
            out["pids"][str(r["pid"])] += n
            if link != "-":
                out["linked"] += n
                out["links"][link] += n
            out["threads"][str(r["tid"])][link] += n
            out["names"][r.get("thread", "")][link] += n
    return out


REPORT = re.compile(r'msg="Reporting (\d+)x trace hash \S+ -> TX ([0-9a-f]+) for PID (\d+)"')
FAILED = re.compile(r'msg="Failed to send trace mappings to APM agent')
ATTACH = re.compile(r'msg="PID (\d+) apm\.service\.name: (.*), trace socket: (.*)"$')


def log(path, pid):
    pid = str(pid)
    out = {"reported": 0, "failed": 0, "per_tx": collections.Counter(),
           "sent_per_tx": collections.Counter(), "attach": None, "attached": False}
    last = last_tx = None
    with open(path, errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            m = REPORT.search(line)
            if m:
                last, last_tx = m.group(3), m.group(2)
                if last == pid:
                    out["reported"] += int(m.group(1))
                    out["per_tx"][last_tx] += int(m.group(1))
                    out["sent_per_tx"][last_tx] += int(m.group(1))
                continue
            if FAILED.search(line):
                if last == pid:
                    out["failed"] += 1
                    out["sent_per_tx"][last_tx] -= 1
                continue
            m = ATTACH.search(line)
            if m and m.group(1) == pid:
                out["attach"] = {"service": m.group(2), "socket": m.group(3)}
            if 'msg="Attached to APM integration interpreter in PID %s"' % pid in line:
                out["attached"] = True
    return out


MARGIN_MS = 100
LOG_TIME = re.compile(r'^time=(\S+) ')


def unlinked(samples_path, log_path, pid):
    import datetime
    attach_ns = None
    with open(log_path, errors="replace") as f:
        for line in f:
            if 'msg="Attached to APM integration interpreter in PID %s"' % pid in line:
                t = datetime.datetime.fromisoformat(LOG_TIME.match(line).group(1).replace("Z", "+00:00"))
                attach_ns = int(t.timestamp() * 1e9)
                break
    out = {"unlinked": 0, "after_attach": 0, "attach_ns": attach_ns, "proflink_threads": 0,
           "thread_starts": 0, "thread_ends": 0, "after_attach_samples": []}
    rows = []
    names = collections.defaultdict(set)  # tid -> every name its samples carried
    last_linked = {}  # tid -> time of its last linked sample
    with open(samples_path) as f:
        for line in f:
            r = json.loads(line)
            if r["pid"] != int(pid) or r.get("type") != "samples":
                continue
            names[r.get("tid")].add(r.get("thread", ""))
            if not r.get("trace_id"):
                rows.append(r)
            elif r.get("times"):
                last_linked[r.get("tid")] = max(last_linked.get(r.get("tid"), 0), max(r["times"]))
    main_names = names.get(int(pid), set())
    ended = set()  # threads whose end was already allowed for
    for r in rows:
        tid = r.get("tid")
        if tid != int(pid) and tid in last_linked and tid not in ended and r.get("times"):
            # a thread's end: once its start routine returned, proflink's exit-key destructor
            # unpublishes its record before freeing it, and the C library's exit work after
            # that (other destructors, the stack, exit) runs with none. One sample of a thread,
            # after its last linked one, is that; more would be a record lost while it worked.
            end = [t for t in r["times"] if t > last_linked[tid]]
            if end:
                ended.add(tid)
                out["thread_ends"] += 1
                r = dict(r, times=[t for t in r["times"] if t != end[0]], count=r["count"] - 1)
                if not r["count"]:
                    continue
        tid, name = r.get("tid"), r.get("thread", "")
        seen = names[tid]
        if any(n.startswith("proflink-") or n == "stats-probe" for n in seen):
            # proflink's own threads (reader, intake) and the tests' stats probe work for no
            # trace: all of their samples, also those taken before they named themselves
            out["proflink_threads"] += r["count"]
            continue
        if tid != int(pid) and name in main_names and len(seen) > 1:
            # a thread's first instructions, still under its creator's name (it names itself
            # once running): the C library's thread start runs before proflink's start wrapper
            # sets the thread's record, which no library can set earlier. On a loaded machine a
            # thread created before the attach can run them well after it.
            out["thread_starts"] += r["count"]
            continue
        out["unlinked"] += r["count"]
        if attach_ns is None:
            out["after_attach"] += r["count"]
            continue
        late = [t for t in r.get("times", []) if t > attach_ns + MARGIN_MS * 1000000]
        out["after_attach"] += len(late)
        out["after_attach_samples"] += [{"tid": tid, "thread": name,
                                         "ms_after_attach": round((t - attach_ns) / 1e6, 1)}
                                        for t in late]
    return out


def fifo(path, pid):
    out = {"correlations": 0, "per_tx": collections.Counter()}
    with open(path) as f:
        for line in f:
            r = json.loads(line)
            if r.get("type") == "correlation" and r.get("pid") == int(pid):
                out["correlations"] += r["count"]
                out["per_tx"][r["transaction_id"]] += r["count"]
    return out


def deferral(path, pid):
    out = collections.defaultdict(lambda: {"before": 0, "delivered": 0, "late": 0, "unheld": False})
    released = set()
    seen_correlation = False
    with open(path) as f:
        for line in f:
            r = json.loads(line)
            if r.get("pid") != int(pid):
                continue
            txn = r.get("transaction_id")
            if r["type"] == "correlation":
                out[txn]["late" if txn in released else "before"] += r["count"]
                seen_correlation = True
            elif r["type"] == "transaction":
                out[txn]["delivered"] += sum(r["stack_trace_ids"].values())
                if txn not in released:
                    out[txn]["unheld"] = not seen_correlation
                released.add(txn)
    return out


def main():
    cmd, path, args = sys.argv[1], sys.argv[2], sys.argv[3:]
    if cmd == "samples":
        res = samples(path, args)
    elif cmd == "log":
        res = log(path, args[0])
    elif cmd == "unlinked":
        res = unlinked(path, args[0], args[1])
    elif cmd == "deferral":
        res = deferral(path, args[0])
    elif cmd == "fifo":
        res = fifo(path, args[0])
    else:
        raise SystemExit(__doc__)
    json.dump(res, sys.stdout, sort_keys=True)
    print()


if __name__ == "__main__":
    main()
