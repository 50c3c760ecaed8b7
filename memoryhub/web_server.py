"""`python -m memoryhub.web_server`: uvicorn's command line, keeping TCP_NODELAY with --workers.

With --workers N, uvicorn binds the socket its workers share itself, without naming IPPROTO_TCP.
Accepted sockets inherit the listener's protocol number, and asyncio turns TCP_NODELAY on only
when it is IPPROTO_TCP: Nagle's algorithm stays on, and every keep-alive response after the
first waits ~40 ms for the client's delayed ACK (Kludex/uvicorn#3149, open as of uvicorn 0.54).
One worker is unaffected: asyncio binds that socket itself.
"""

from __future__ import annotations

import socket

from uvicorn.config import Config
from uvicorn.main import main

_uvicorn_bind_socket = Config.bind_socket


def bind_socket(config: Config) -> socket.socket:
    """uvicorn's bind, with a TCP listener re-declared as IPPROTO_TCP (the same descriptor)."""
    sock = _uvicorn_bind_socket(config)
    if sock.family in {socket.AF_INET, socket.AF_INET6} and sock.proto != socket.IPPROTO_TCP:
        return socket.socket(sock.family, sock.type, socket.IPPROTO_TCP, fileno=sock.detach())
    return sock


def run() -> None:
    """Run uvicorn's command line (sys.argv) with the fixed bind."""
    Config.bind_socket = bind_socket  # type: ignore[method-assign,assignment]  # Replacing it is the fix.
    main()


if __name__ == "__main__":
    run()
