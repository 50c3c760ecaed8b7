"""`python -m memoryhub.web_server`: uvicorn's command line, with --workers sharing the load.

With --workers N, uvicorn binds one socket and every worker accepts from it. asyncio accepts
every pending connection at once when it wakes, so agents that connect together mostly land in
one worker: at 8 keep-alive agents one worker served nearly all requests while the other idled.
Here each worker listens on a socket of its own, all bound to the same address with
SO_REUSEPORT, and the kernel spreads new connections over them by address hash. The parent's
socket, bound first so the port is taken and reported, never listens, so no connection waits
on it. A worker that dies takes its socket with it; new connections go to the others until
uvicorn has restarted it.

The workers' own sockets are also declared IPPROTO_TCP: uvicorn's shared socket was not, and
asyncio turns TCP_NODELAY on only for IPPROTO_TCP sockets, so every keep-alive response after
the first waited ~40 ms for the client's delayed ACK (Kludex/uvicorn#3149). uvloop, which
process_model.web_command names, turns it on for every TCP socket; the declaration keeps a
plain asyncio loop right too.
One worker is unaffected by both: asyncio binds that socket itself.
"""

from __future__ import annotations

import logging
import socket

from uvicorn.config import Config
from uvicorn.main import main
from uvicorn.supervisors import multiprocess

logger = logging.getLogger("uvicorn.error")
_uvicorn_bind_socket = Config.bind_socket


def reuse_port_listener(family: socket.AddressFamily, address: tuple[str, int]) -> socket.socket:
    """A TCP socket bound to `address` with SO_REUSEPORT, so other workers can bind it too."""
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind(address)
    except OSError:
        sock.close()
        raise
    return sock


def bind_socket(config: Config) -> socket.socket:
    """uvicorn's bind for a TCP host and port, with SO_REUSEPORT; its own for a path or fd."""
    if config.uds is not None or config.fd is not None:
        return _uvicorn_bind_socket(config)
    family = socket.AF_INET6 if config.host and ":" in config.host else socket.AF_INET
    try:
        sock = reuse_port_listener(family, (config.host, config.port))
    except OSError as exc:
        logger.error(exc)
        raise SystemExit(3) from exc  # uvicorn's STARTUP_FAILURE
    host, port = sock.getsockname()[:2]
    scheme = "https" if config.is_ssl else "http"
    shown = f"[{host}]" if family == socket.AF_INET6 else host
    logger.info("Uvicorn running on %s://%s:%d (Press CTRL+C to quit)", scheme, shown, port)
    sock.set_inheritable(True)
    return sock


class ReusePortProcess(multiprocess.Process):
    """A uvicorn worker that listens on a socket of its own instead of the parent's."""

    def target(self, sockets: list[socket.socket] | None = None) -> None:
        own = []
        for shared in sockets or []:
            if shared.family in {socket.AF_INET, socket.AF_INET6}:
                own.append(reuse_port_listener(shared.family, shared.getsockname()[:2]))
                shared.close()
            else:
                own.append(shared)
        super().target(own)


def run() -> None:
    """Run uvicorn's command line (sys.argv) with the per-worker listeners."""
    Config.bind_socket = bind_socket  # type: ignore[method-assign,assignment]  # Replacing it is the point.
    multiprocess.Process = ReusePortProcess  # type: ignore[misc]  # The supervisor builds workers by this name.
    main()


if __name__ == "__main__":
    # Imported by name, so the workers (spawned, not forked) find ReusePortProcess where the
    # supervisor's pickled reference points: memoryhub.web_server, not __main__.
    from memoryhub.web_server import run as run_by_name

    run_by_name()
