#!/usr/bin/env python3
"""otel_ctx_reader.py — an independent, minimal reader of the OpenTelemetry process context
(OTEP 4719) of another process, for tests. It does what an out-of-process profiler does:

  1. find the mapping by its exact name in /proc/PID/maps (non-executable);
  2. read the 32-byte header through /proc/PID/mem and validate it;
  3. copy the payload the header points at, then re-read the timestamp: a copy is accepted only
     if the timestamp was non-zero and unchanged across the copy (seqlock reader);
  4. decode the protobuf ProcessContext with its own decoder (shares nothing with proflink).

usage: otel_ctx_reader.py PID [--address HEX] [--retries N] [--raw-out FILE]
                          [--records HEX,HEX... [--key-map JSON-ARRAY]]
       otel_ctx_reader.py PID --poll SECONDS [--no-recheck]

--records also reads OTel thread records (OTEP 4947) at those addresses the way the landing
reader does: the 28-byte header first, then exactly attrs-data-size bytes, and names each
attribute with threadlocal.attribute_key_map; --key-map starts from an older map (a reader that
cached it), which is re-read, as the OTEP requires, when a record uses an index it lacks. Adds
"records": [{address, valid, trace_id, span_id, trace_flags, attrs_size, attributes,
malformed}] and "key_map_refreshes" to the output.

One-shot mode prints one JSON object:
  {"pid", "mapping_name", "mappings_found", "address", "perms", "version", "payload_size",
   "payload_ptr", "published_at_ns", "resource": {k: v}, "attributes": {k: v or [..]},
   "duplicate_keys": [...]}
and exits 0; 1 if there is no valid context; 3 if every attempt raced an update.
Poll mode prints one JSON line per newly accepted publication ({"ts", "resource",
"attributes"}), then {"summary": {...counts...}}. --no-recheck skips step 3's re-check (a
negative control: it shows what a reader without it would accept).
"""
import argparse
import json
import struct
import sys
import time

# Every name the readers accept (the OpenTelemetry eBPF profiler's list): memfd mapping (named by
# prctl or not, the kernel may or may not print "(deleted)") and named anonymous mapping.
MAPPING_NAMES = (
    "/memfd:OTEL_CTX (deleted)",
    "/memfd:OTEL_CTX",
    "[anon_shmem:OTEL_CTX]",
    "[anon:OTEL_CTX]",
)
HEADER = struct.Struct("<8sIIQQ")  # signature, version, payload_size, published_at_ns, payload
TS_OFFSET = 16
SIGNATURE = b"OTEL_CTX"
VERSION = 2
PAYLOAD_MAX = 65536


class Invalid(Exception):
    """The context is absent or malformed."""


class Raced(Exception):
    """The copy overlapped an update; try again."""


class DecodeError(Exception):
    pass


# ---- /proc -------------------------------------------------------------------------------


def parse_maps_line(line):
    """(start, end, perms, name) of one /proc/PID/maps line; name may contain spaces."""
    parts = line.rstrip("\n").split(None, 5)
    if len(parts) < 5:
        return None
    start, end = (int(x, 16) for x in parts[0].split("-"))
    return start, end, parts[1], parts[5] if len(parts) > 5 else ""


def is_context_mapping(perms, name):
    return "x" not in perms and name in MAPPING_NAMES


def find_mappings(pid):
    found = []
    with open(f"/proc/{pid}/maps") as f:
        for line in f:
            m = parse_maps_line(line)
            if m and is_context_mapping(m[2], m[3]):
                found.append(m)
    return found


def mapping_at(pid, address):
    with open(f"/proc/{pid}/maps") as f:
        for line in f:
            m = parse_maps_line(line)
            if m and m[0] <= address < m[1]:
                return m
    return None


def read_mem(mem, address, size):
    mem.seek(address)
    data = mem.read(size)
    if len(data) != size:
        raise OSError("short read")
    return data


def read_timestamp(mem, address):
    return struct.unpack("<Q", read_mem(mem, address + TS_OFFSET, 8))[0]


def read_once(mem, address, recheck=True):
    """One seqlock read: (header fields, payload bytes). Raises Raced or Invalid."""
    try:
        ts1 = read_timestamp(mem, address)
        if ts1 == 0:
            raise Raced("being written")
        sig, version, size, ts, ptr = HEADER.unpack(read_mem(mem, address, HEADER.size))
    except OSError as e:
        raise Invalid(f"cannot read header: {e}")
    if sig != SIGNATURE:
        raise Invalid(f"bad signature {sig!r}")
    if version != VERSION:
        raise Invalid(f"unsupported version {version}")
    if size == 0 or size > PAYLOAD_MAX:
        raise Invalid(f"bad payload size {size}")
    try:
        payload = read_mem(mem, ptr, size)
    except OSError:
        payload = None  # may be an update freeing it: decide after the re-check
    if recheck:
        try:
            ts2 = read_timestamp(mem, address)
        except OSError as e:
            raise Invalid(f"cannot re-read header: {e}")
        if ts2 != ts1:
            raise Raced("timestamp changed during the copy")
    if payload is None:
        raise Invalid("cannot read payload")
    hdr = {"version": version, "payload_size": size, "payload_ptr": ptr, "published_at_ns": ts1}
    return hdr, payload


# ---- protobuf --------------------------------------------------------------------------------


def varint(buf, pos, end):
    value = shift = 0
    while True:
        if pos >= end or shift > 63:
            raise DecodeError("truncated or overlong varint")
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, pos
        shift += 7


def fields(buf, start, end):
    """Yields (field number, wire type, value); LEN values are (start, end) slices."""
    pos = start
    while pos < end:
        key, pos = varint(buf, pos, end)
        field, wire = key >> 3, key & 7
        if field == 0:
            raise DecodeError("field number 0")
        if wire == 0:
            value, pos = varint(buf, pos, end)
        elif wire == 1:
            if pos + 8 > end:
                raise DecodeError("truncated fixed64")
            value, pos = buf[pos:pos + 8], pos + 8
        elif wire == 2:
            n, pos = varint(buf, pos, end)
            if n > end - pos:
                raise DecodeError("length past the end")
            value, pos = (pos, pos + n), pos + n
        elif wire == 5:
            if pos + 4 > end:
                raise DecodeError("truncated fixed32")
            value, pos = buf[pos:pos + 4], pos + 4
        else:
            raise DecodeError(f"unsupported wire type {wire}")
        yield field, wire, value
    if pos != end:
        raise DecodeError("message overruns its length")


def text(buf, span):
    try:  # strict, like the Go protobuf runtime: one bad string rejects the whole payload
        return bytes(buf[span[0]:span[1]]).decode("utf-8", errors="strict")
    except UnicodeDecodeError as e:
        raise DecodeError(f"invalid UTF-8 in a string field: {e}")


def any_value(buf, span):
    """AnyValue: 1 string, 2 bool, 3 int, 4 double, 5 ArrayValue, 6 KeyValueList, 7 bytes."""
    value = None
    for field, wire, v in fields(buf, *span):
        if field == 1 and wire == 2:
            value = text(buf, v)
        elif field == 2 and wire == 0:
            value = bool(v)
        elif field == 3 and wire == 0:
            value = v - (1 << 64) if v >= 1 << 63 else v
        elif field == 4 and wire == 1:
            value = struct.unpack("<d", v)[0]
        elif field == 5 and wire == 2:  # ArrayValue.values = 1
            value = [any_value(buf, item) for f, w, item in fields(buf, *v) if f == 1 and w == 2]
        elif field == 6 and wire == 2:  # KeyValueList.values = 1
            value = dict(key_value(buf, kv) for f, w, kv in fields(buf, *v) if f == 1 and w == 2)
        elif field == 7 and wire == 2:
            value = bytes(buf[v[0]:v[1]]).hex()
    return value


def key_value(buf, span):
    """KeyValue: 1 key (string), 2 value (AnyValue)."""
    key, value = None, None
    for field, wire, v in fields(buf, *span):
        if field == 1 and wire == 2:
            key = text(buf, v)
        elif field == 2 and wire == 2:
            value = any_value(buf, v)
    if key is None:
        raise DecodeError("KeyValue without a key")
    return key, value


def add(table, dups, kv):
    if kv[0] in table:
        dups.append(kv[0])
    table[kv[0]] = kv[1]


def process_context(payload):
    """ProcessContext: 1 Resource (its 1: repeated KeyValue), 2 repeated KeyValue."""
    buf = memoryview(payload)
    resource, attributes, dups = {}, {}, []
    for field, wire, v in fields(buf, 0, len(buf)):
        if field == 1 and wire == 2:
            for f, w, kv in fields(buf, *v):
                if f == 1 and w == 2:
                    add(resource, dups, key_value(buf, kv))
        elif field == 2 and wire == 2:
            add(attributes, dups, key_value(buf, v))
    return resource, attributes, dups


# ---- modes ---------------------------------------------------------------------------------


def locate(pid, address):
    """(address, mapping name, perms, how many named mappings were found)."""
    named = find_mappings(pid)
    if address is not None:
        m = mapping_at(pid, address)
        if not m:
            raise Invalid(f"nothing mapped at {address:#x}")
        return address, m[3], m[2], len(named)
    if not named:
        raise Invalid("no OTEL_CTX mapping")
    return named[0][0], named[0][3], named[0][2], len(named)


RECORD_HEADER = 28
RECORD_MAX = 640


def read_record(mem, address):
    """The record's header, then exactly attrs-data-size bytes (capped at the 640-byte limit)."""
    hdr = read_mem(mem, address, RECORD_HEADER)
    valid, flags, size = hdr[24], hdr[25], struct.unpack_from("=H", hdr, 26)[0]
    attrs = read_mem(mem, address + RECORD_HEADER, min(size, RECORD_MAX - RECORD_HEADER)) \
        if size else b""
    entries, pos, malformed = [], 0, False
    while pos < len(attrs):
        if len(attrs) - pos < 2 or attrs[pos + 1] > len(attrs) - pos - 2:
            malformed = True  # a reader stops at an entry the buffer cannot hold
            break
        entries.append((attrs[pos], attrs[pos + 2:pos + 2 + attrs[pos + 1]]))
        pos += 2 + attrs[pos + 1]
    return {"address": f"{address:#x}", "valid": valid, "trace_flags": flags,
            "trace_id": hdr[:16].hex(), "span_id": hdr[16:24].hex(), "attrs_size": size,
            "malformed": malformed}, entries


def decode_records(mem, args, key_map, reread):
    records, refreshes = [], 0
    for a in args.records.split(","):
        rec, entries = read_record(mem, int(a, 16))
        if any(k >= len(key_map) for k, _ in entries):
            key_map = reread()
            refreshes += 1
        named = {}
        for k, v in entries:  # the last occurrence of a key wins
            name = key_map[k] if k < len(key_map) else f"#{k}"
            named[name] = v.decode("utf-8", "replace")
        rec["attributes"] = named
        records.append(rec)
    return records, refreshes


def one_shot(args):
    address, name, perms, count = locate(args.pid, args.address)
    with open(f"/proc/{args.pid}/mem", "rb", buffering=0) as mem:
        for attempt in range(args.retries):
            try:
                hdr, payload = read_once(mem, address)
                break
            except Raced:
                time.sleep(0.001 * (attempt + 1))
        else:
            raise Raced(f"no consistent copy in {args.retries} attempts")
    if args.raw_out:
        with open(args.raw_out, "wb") as f:
            f.write(payload)
    resource, attributes, dups = process_context(payload)
    out = {"pid": args.pid, "mapping_name": name, "mappings_found": count,
           "address": f"{address:#x}", "perms": perms}
    out.update(hdr)
    out.update({"resource": resource, "attributes": attributes, "duplicate_keys": dups})
    if args.records:
        def reread():
            with open(f"/proc/{args.pid}/mem", "rb", buffering=0) as m:
                for attempt in range(args.retries):
                    try:
                        return process_context(read_once(m, address)[1])[1].get(
                            "threadlocal.attribute_key_map", [])
                    except Raced:
                        time.sleep(0.001 * (attempt + 1))
            raise Raced("key map: no consistent copy")
        key_map = json.loads(args.key_map) if args.key_map is not None else \
            attributes.get("threadlocal.attribute_key_map", [])
        with open(f"/proc/{args.pid}/mem", "rb", buffering=0) as mem:
            out["records"], out["key_map_refreshes"] = decode_records(mem, args, key_map, reread)
    print(json.dumps(out, ensure_ascii=False))


def poll(args):
    address = locate(args.pid, args.address)[0]
    counts = {"accepted": 0, "raced": 0, "undecodable": 0, "invalid": 0, "reads": 0}
    last = None
    end = time.monotonic() + args.poll
    with open(f"/proc/{args.pid}/mem", "rb", buffering=0) as mem:
        while time.monotonic() < end:
            counts["reads"] += 1
            try:
                hdr, payload = read_once(mem, address, recheck=not args.no_recheck)
                resource, attributes, _ = process_context(payload)
            except Raced:
                counts["raced"] += 1
                continue
            except DecodeError:
                counts["undecodable"] += 1
                continue
            except Invalid:
                counts["invalid"] += 1
                continue
            counts["accepted"] += 1
            if hdr["published_at_ns"] != last:
                last = hdr["published_at_ns"]
                print(json.dumps({"ts": last, "resource": resource, "attributes": attributes}))
    print(json.dumps({"summary": counts}))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("pid", type=int)
    ap.add_argument("--address", type=lambda s: int(s, 16), help="header address (unnamed mapping)")
    ap.add_argument("--retries", type=int, default=5)
    ap.add_argument("--raw-out", help="also write the payload bytes to this file")
    ap.add_argument("--poll", type=float, help="read continuously for this many seconds")
    ap.add_argument("--no-recheck", action="store_true", help="skip the timestamp re-check")
    ap.add_argument("--records", help="comma-separated addresses of OTel thread records")
    ap.add_argument("--key-map", help="JSON array: the key map a reader cached earlier")
    args = ap.parse_args()
    try:
        poll(args) if args.poll else one_shot(args)
    except Invalid as e:
        print(json.dumps({"pid": args.pid, "error": str(e)}))
        return 1
    except DecodeError as e:
        print(json.dumps({"pid": args.pid, "error": f"undecodable payload: {e}"}))
        return 1
    except Raced as e:
        print(json.dumps({"pid": args.pid, "error": str(e)}))
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main())
