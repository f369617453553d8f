"""The preloaded proflink library, bound through ctypes (nothing compiled).

proflink is used only if the process already has it mapped (LD_PRELOAD, or linked by the
program): a copy loaded late would not get the static TLS block that profilers read, so it is
opened with RTLD_NOLOAD and never loaded here. Without it, or when proflink is disabled,
``native`` is None and every caller falls back to the plain SDK behaviour.

Calls go through ctypes function prototypes bound to the library, made with PYFUNCTYPE: the
call keeps the GIL. Every proflink call used here returns in nanoseconds to microseconds and
never blocks; releasing the GIL around it (what CFUNCTYPE does) would let any thread waiting
for the GIL take it at each context switch of a span, a thread switch per call.
"""
import ctypes
import os
import re
import warnings

# The apmint profiler recognises the library by this file name; the musl build matches too.
LIBRARY_NAME = re.compile(r"/elastic-jvmti-linux-proflink-[^/]*\.so$")
# sizeof(proflink_context): trace_id[16] span_id[8] transaction_id[8] flags reserved[7]
CONTEXT_SIZE = 40
# sizeof(proflink_stats) of the version this package was written for (17 u64 counters)
STATS_SIZE = 17 * 8


def mapped_library():
    """The path of the proflink library mapped into this process, or None."""
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                i = line.find("/")
                if i >= 0:
                    path = line[i:].rstrip("\n")
                    if LIBRARY_NAME.search(path):
                        return path
    except OSError:
        pass
    return None


class Native:
    """The proflink calls this package makes, bound once."""

    def __init__(self, path):
        lib = ctypes.CDLL(path, mode=os.RTLD_NOLOAD | os.RTLD_LAZY)
        c = ctypes
        self.path = path

        def fn(name, restype, *argtypes):
            return c.PYFUNCTYPE(restype, *argtypes)((name, lib))

        # set_context takes the 40-byte proflink_context as a bytes object: ctypes passes the
        # address of its contents (never copied; CPython never moves an object), None is NULL
        self.set_context = fn("proflink_set_context", None, c.c_char_p)
        self.end_transaction = fn("proflink_end_transaction", c.c_int, c.c_char_p, c.c_char_p,
                                  c.c_uint8, c.c_void_p, c.c_void_p)
        self.take_transactions = fn("proflink_take_transactions", c.c_long, c.c_void_p, c.c_size_t)
        self.transactions_fd = fn("proflink_transactions_fd", c.c_int)
        self.flush_transactions = fn("proflink_flush_transactions", c.c_int)
        self.set_resource = fn("proflink_set_resource", c.c_int, c.c_char_p)
        self.samples_delay_ms = fn("proflink_samples_delay_ms", c.c_uint32)
        self._get_stats = fn("proflink_get_stats", c.c_int, c.c_void_p, c.c_size_t)

    def stats(self):
        """proflink_get_stats as a tuple of its counters (include/proflink.h order), or None
        when proflink is disabled."""
        buf = (ctypes.c_uint64 * (STATS_SIZE // 8))()
        if self._get_stats(ctypes.addressof(buf), STATS_SIZE) < 0:
            return None
        return tuple(buf)


def _bind():
    if os.environ.get("PROFLINK_OTEL_DISABLE") == "1":
        return None
    path = mapped_library()
    if path is None:
        return None
    try:
        n = Native(path)
    except (OSError, AttributeError) as e:
        # an older proflink without the calls this package needs: stay transparent, say why once
        warnings.warn(f"proflink-otel: {path} not usable ({e}); profiling correlation is off")
        return None
    # A disabled proflink (..._ENABLED=false, PROFLINK_INCLUDE/EXCLUDE) answers -1: treat it as
    # absent so that the hot path does not pay calls that do nothing.
    if n.stats() is None:
        return None
    return n


native = _bind()
