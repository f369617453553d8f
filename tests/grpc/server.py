"""An unmodified gRPC server in Python (grpcio, plaintext HTTP/2, a pool of 4 worker threads) for
the HTTP matrix (tests/http_matrix.py); it knows nothing of proflink. The unary method
/matrix.Work/Run takes the milliseconds of CPU to burn as its request message (decimal text) and
logs the work itself from its own reading of the call's metadata:
"w <tid> <start ns> <end ns> <trace id or ->" to LOG.
python server.py LOG — prints "port N" (kernel-picked, 127.0.0.1). grpcio's C core reads and
writes the connections on its own threads and runs the handlers on the pool's: a hand-off."""
import sys
import threading
import time
from concurrent import futures

import grpc

LOG = open(sys.argv[1], "a", buffering=1)
LOCK = threading.Lock()


def run(request, context):
    tp = ""
    for key, value in context.invocation_metadata():
        if key == "traceparent":
            tp = value
    parts = tp.strip().split("-")
    trace = parts[1] if len(parts) == 4 and len(parts[1]) == 32 else "-"
    ms = int(request or b"0")
    start = time.monotonic_ns()
    cpu0 = time.thread_time()
    while time.thread_time() - cpu0 < ms / 1000.0:
        pass
    end = time.monotonic_ns()
    with LOCK:
        LOG.write("w %d %d %d %s\n" % (threading.get_native_id(), start, end, trace))
    return b"ok"


def main():
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    handler = grpc.method_handlers_generic_handler(
        "matrix.Work", {"Run": grpc.unary_unary_rpc_method_handler(run)})
    server.add_generic_rpc_handlers((handler,))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    print("port %d" % port, flush=True)
    server.wait_for_termination()


if __name__ == "__main__":
    main()
