"""The web workers' shared socket: connections accepted on it have Nagle's algorithm off."""

from __future__ import annotations

import asyncio
import socket

from uvicorn.config import Config

from memoryhub.web_server import bind_socket


async def _nodelay_of_an_accepted_connection(listener: socket.socket) -> int:
    # What each uvicorn worker does with the shared socket: asyncio serves it.
    loop = asyncio.get_running_loop()
    accepted: asyncio.Future[int] = loop.create_future()

    class Probe(asyncio.Protocol):
        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            sock = transport.get_extra_info("socket")
            accepted.set_result(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
            transport.close()

    server = await loop.create_server(Probe, sock=listener)
    try:
        _, writer = await asyncio.open_connection(*listener.getsockname()[:2])
        result = await asyncio.wait_for(accepted, timeout=10)
        writer.close()
    finally:
        server.close()
        await server.wait_closed()
    return result


def test_connections_on_the_workers_socket_have_tcp_nodelay():
    listener = bind_socket(Config("memoryhub.asgi:application", host="127.0.0.1", port=0))
    assert listener.proto == socket.IPPROTO_TCP
    assert asyncio.run(_nodelay_of_an_accepted_connection(listener)) != 0


def test_a_unix_socket_is_bound_as_uvicorn_binds_it(tmp_path):
    path = tmp_path / "web.sock"
    listener = bind_socket(Config("memoryhub.asgi:application", uds=str(path)))
    try:
        assert listener.family == socket.AF_UNIX
        assert path.exists()
    finally:
        listener.close()
