"""A plain HTTP client for the fault suite: one connection per request, as a fresh agent opens.

A new connection for every request lets the kernel hand each to whichever web worker accepts
first, so the load reaches both workers and a killed one is noticed.
"""

from __future__ import annotations

import http.client
import json
from dataclasses import dataclass
from typing import Any

# The production settings redirect plain HTTP to HTTPS; the proxy in front says it was HTTPS.
PROXY_HEADERS = {"X-Forwarded-Proto": "https"}


@dataclass(frozen=True)
class Reply:
    status: int
    headers: dict[str, str]  # Names lower-cased.
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)

    @property
    def is_json(self) -> bool:
        return self.headers.get("content-type", "").startswith("application/json")


def call(
    port: int,
    method: str,
    path: str,
    *,
    key: str = "",
    body: object = None,
    cookie: str = "",
    timeout: float = 60,
) -> Reply:
    """Send one request to 127.0.0.1:port; OSError (and http.client errors) if it breaks off."""
    headers = dict(PROXY_HEADERS)
    if key:
        headers["Authorization"] = f"Bearer {key}"
    if cookie:
        headers["Cookie"] = cookie
    payload = None
    if body is not None:
        payload = json.dumps(body).encode()
        headers["Content-Type"] = "application/json"
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        connection.request(method, path, body=payload, headers=headers)
        response = connection.getresponse()
        return Reply(
            status=response.status,
            headers={name.lower(): value for name, value in response.getheaders()},
            body=response.read(),
        )
    finally:
        connection.close()


def is_unavailable_reply(reply: Reply) -> bool:
    """The service's 503: JSON code service_unavailable with a Retry-After to honour."""
    return (
        reply.status == 503
        and reply.is_json
        and reply.json().get("code") == "service_unavailable"
        and int(reply.headers.get("retry-after", "0")) >= 1
    )
