"""An ordinary Python ThreadingHTTPServer that knows nothing of proflink: GET /spin?ms=N burns N
milliseconds of CPU in the thread serving the request, then answers with that thread's native
id; any other path answers at once. Usage: http_spin_server.py PORT [HTTP/1.0|HTTP/1.1]."""
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse


class Handler(BaseHTTPRequestHandler):
    protocol_version = sys.argv[2] if len(sys.argv) > 2 else "HTTP/1.1"

    def do_GET(self):
        url = urlparse(self.path)
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if url.path == "/spin":
            end = time.monotonic() + int(parse_qs(url.query).get("ms", ["0"])[0]) / 1000
            x = 0
            while time.monotonic() < end:
                x += 1
        body = ("%d\n" % threading.get_native_id()).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_POST = do_GET

    def log_message(self, *args):
        pass


ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
