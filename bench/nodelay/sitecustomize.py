"""Force TCP_NODELAY on every accepted TCP connection of this process.

bench/run.py puts this directory on PYTHONPATH for the "official-nodelay"
run only.  The official service listens on a socket made with proto 0, so
asyncio's transports skip their own TCP_NODELAY, and uvicorn writes a
response's head and body separately: on a keep-alive connection the second
write waits for the client's delayed ACK (~40 ms a call).  Setting the option
on each accepted socket removes that stall and nothing else.
"""

import socket

_accept = socket.socket.accept


def _accept_nodelay(self):
    conn, address = _accept(self)
    if conn.family in (socket.AF_INET, socket.AF_INET6) and conn.type == socket.SOCK_STREAM:
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return conn, address


socket.socket.accept = _accept_nodelay
