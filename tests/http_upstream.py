"""An upstream for the nginx proxy test (tests/http_requests.bats): HTTP/1.0 on a unix stream
socket. GET /big answers 40 MB of text that compresses slowly (random words), /tiny "ok".
http_upstream.py SOCKET_PATH — prints "listening" once it does."""
import random
import socketserver
import sys
from http.server import BaseHTTPRequestHandler

random.seed(1)
WORDS = [("%x" % random.getrandbits(40)).encode() for _ in range(5000)]
BLOCK = b" ".join(random.choice(WORDS) for _ in range(100000))[:1 << 20]


class Handler(BaseHTTPRequestHandler):
    def address_string(self):
        return "unix"

    def do_GET(self):
        size = 40 * len(BLOCK) if self.path == "/big" else 2
        self.send_response(200)
        self.send_header("Content-Length", str(size))
        self.send_header("Content-Type", "text/plain")
        self.end_headers()
        if self.path != "/big":
            self.wfile.write(b"ok")
            return
        for _ in range(40):
            self.wfile.write(BLOCK)

    def log_message(self, *args):
        pass


class Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True


srv = Server(sys.argv[1], Handler)
print("listening", flush=True)
srv.serve_forever()
