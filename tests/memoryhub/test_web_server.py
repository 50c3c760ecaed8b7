"""The web workers' sockets: one per worker on the same port, Nagle's algorithm off."""

from __future__ import annotations

import asyncio
import socket
from collections import Counter

from uvicorn.config import Config

from memoryhub.web_server import bind_socket, reuse_port_listener

CONNECTIONS = 32


async def _accept_all(listeners: list[socket.socket], connections: int) -> tuple[Counter[int], int]:
    """Serve every listener as a uvicorn worker does, open `connections` at once, and count
    which listener accepted each; also return TCP_NODELAY of the last accepted socket."""
    loop = asyncio.get_running_loop()
    accepted: Counter[int] = Counter()
    nodelay = 0
    done = asyncio.Event()

    def probe(index: int) -> type[asyncio.Protocol]:
        class Probe(asyncio.Protocol):
            def connection_made(self, transport: asyncio.BaseTransport) -> None:
                nonlocal nodelay
                sock = transport.get_extra_info("socket")
                nodelay = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)
                accepted[index] += 1
                if sum(accepted.values()) == connections:
                    done.set()

        return Probe

    servers = [
        await loop.create_server(probe(index), sock=listener)
        for index, listener in enumerate(listeners)
    ]
    address = listeners[0].getsockname()[:2]
    writers = []
    try:
        opened = await asyncio.gather(
            *(asyncio.open_connection(*address) for _ in range(connections))
        )
        writers = [writer for _, writer in opened]
        await asyncio.wait_for(done.wait(), timeout=10)
    finally:
        for writer in writers:
            writer.close()
        for server in servers:
            server.close()
            await server.wait_closed()
    return accepted, nodelay


def test_each_worker_listens_on_its_own_socket_and_connections_reach_both():
    # The supervisor's socket: bound (the port is taken), never listened on.
    parent = bind_socket(Config("memoryhub.asgi:application", host="127.0.0.1", port=0))
    address = parent.getsockname()[:2]
    workers = [reuse_port_listener(parent.family, address) for _ in range(2)]
    try:
        accepted, nodelay = asyncio.run(_accept_all(workers, CONNECTIONS))
    finally:
        for sock in [parent, *workers]:
            sock.close()
    # Every connection was accepted (none waits on the parent's socket), by both workers.
    assert sum(accepted.values()) == CONNECTIONS
    assert set(accepted) == {0, 1}
    assert nodelay != 0


def test_the_workers_sockets_are_tcp_with_the_port_shared():
    parent = bind_socket(Config("memoryhub.asgi:application", host="127.0.0.1", port=0))
    worker = reuse_port_listener(parent.family, parent.getsockname()[:2])
    try:
        assert parent.getsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT) == 1
        assert worker.proto == socket.IPPROTO_TCP
        assert worker.getsockname() == parent.getsockname()
    finally:
        parent.close()
        worker.close()


def test_a_unix_socket_is_bound_as_uvicorn_binds_it(tmp_path):
    path = tmp_path / "web.sock"
    listener = bind_socket(Config("memoryhub.asgi:application", uds=str(path)))
    try:
        assert listener.family == socket.AF_UNIX
        assert path.exists()
    finally:
        listener.close()
