"""The ceiling of the design: a bare ThreadingHTTPServer answering a fixed JSON body.

It does what any service built on `http.server` must do for a call (parse the
request line and headers, read the body, write an answer on a keep-alive
HTTP/1.1 connection) and nothing else: no routing, no token, no JSON, no
schema, no pack code, no log record.  What a pack service on the same design
reaches, compared with this, is what its own work costs.

    PORT=0 python3 bench/bare_server.py

Like a pack service it writes `{"kind":"listening","port":N}` on stderr once
it listens, and exits 0 on SIGTERM.
"""

import http.server
import json
import os
import signal
import socket
import socketserver
import sys
import threading

BODY = b'{"v":2,"kind":"result","output":{"text":"hello","count":3,"loud":false}}'

RESPONSE = (
    b"HTTP/1.1 200 OK\r\n"
    b"Content-Type: application/json; charset=utf-8\r\n"
    b"Content-Length: " + str(len(BODY)).encode() + b"\r\n"
    b"\r\n" + BODY
)


class Handler(http.server.BaseHTTPRequestHandler):
    """Reads the request body, answers RESPONSE with one write."""

    protocol_version = "HTTP/1.1"

    def setup(self):
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def answer(self):
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        self.wfile.write(RESPONSE)

    do_GET = do_POST = answer

    def log_message(self, format, *args):
        """No access log: the ceiling writes nothing per call."""


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):   # ThreadingHTTPServer, also on 3.6
    daemon_threads = True
    request_queue_size = 1024


def main():
    server = Server(("127.0.0.1", int(os.environ.get("PORT", "0"))), Handler)
    signal.signal(signal.SIGTERM, lambda *_: threading.Thread(target=server.shutdown).start())
    port = server.server_address[1]
    sys.stderr.write(json.dumps({"kind": "listening", "event": "listening", "port": port}) + "\n")
    sys.stderr.flush()
    server.serve_forever()
    server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
