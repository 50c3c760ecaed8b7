"""Bad input never gives a 500: oversized and chunked bodies, odd page numbers, key floods."""

from __future__ import annotations

import http.client
import json
from urllib.parse import urlsplit

import httpx2
import pytest
import time_machine
from django.conf import settings as django_settings
from django.utils import timezone

from memoryhub.models import Memory
from memoryhub.services.agents import create_agent, create_personal_key

from .conftest import API, Http

MCP_HEADERS = {"Accept": "application/json, text/event-stream"}


def _batch_of(size_bytes):
    """A batch request body of about `size_bytes` (each item within the content limit)."""
    count = size_bytes // 30_000 + 1
    items = [{"kind": "fact", "content": "x" * 30_000} for _ in range(min(count, 100))]
    return {"user": "alice", "items": items}


def _post_chunked(base_url, path, body: bytes, headers):
    """POST with Transfer-Encoding: chunked (no Content-Length); return (status, JSON)."""
    url = urlsplit(base_url)
    connection = http.client.HTTPConnection(url.hostname, url.port, timeout=60)
    pieces = (body[i : i + 65_536] for i in range(0, len(body), 65_536))
    try:
        connection.request("POST", path, body=pieces, headers=headers, encode_chunked=True)
        response = connection.getresponse()
        return response.status, json.loads(response.read())
    finally:
        connection.close()


def _stored(user):
    return Memory.objects.for_owner(user=user, mode=None).count()


def test_a_3_mb_batch_is_413_json_and_stores_nothing(world):
    response = world.agent_http.post("/memories/batch", _batch_of(3_000_000))
    assert response.status_code == 413
    assert response.json()["code"] == "content_too_large"
    assert str(django_settings.DATA_UPLOAD_MAX_MEMORY_SIZE) in response.json()["detail"]
    assert _stored(world.alice) == 0


def test_under_the_production_server_an_oversized_body_is_413_json(world, asgi_url):
    http = Http(asgi_url, world.agent_http.key)
    response = http.post("/memories/batch", _batch_of(3_000_000))
    assert (response.status_code, response.json()["code"]) == (413, "content_too_large")
    assert _stored(world.alice) == 0


def test_a_chunked_body_is_counted_as_it_arrives(world, asgi_url):
    headers = {"Authorization": f"Bearer {world.agent_http.key}"}
    headers["Content-Type"] = "application/json"
    big = json.dumps(_batch_of(3_000_000)).encode()
    status, body = _post_chunked(asgi_url, f"{API}/memories/batch", big, headers)
    assert (status, body["code"]) == (413, "content_too_large")
    assert _stored(world.alice) == 0
    # A chunked body within the limit is an ordinary request.
    small = json.dumps({"user": "alice", "kind": "fact", "content": "Works at Acme"}).encode()
    status, body = _post_chunked(asgi_url, f"{API}/memories", small, headers)
    assert (status, body["content"]) == (201, "Works at Acme")


def test_an_oversized_mcp_body_is_413_json(world, asgi_url):
    headers = {**MCP_HEADERS, "Authorization": f"Bearer {world.agent_http.key}"}
    arguments = {"user": "alice", "kind": "fact", "content": "x" * 3_000_000}
    call = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "remember", "arguments": arguments},
    }
    response = httpx2.post(f"{asgi_url}/mcp", json=call, headers=headers, timeout=60)
    assert (response.status_code, response.json()["code"]) == (413, "content_too_large")
    status, body = _post_chunked(
        asgi_url,
        "/mcp",
        json.dumps(call).encode(),
        {**headers, "Content-Type": "application/json"},
    )
    assert (status, body["code"]) == (413, "content_too_large")
    assert _stored(world.alice) == 0


@pytest.fixture
def signed_in_cookies(client, world):
    """Alice's session cookie, for pages of the live server."""
    client.force_login(world.alice)
    name = django_settings.SESSION_COOKIE_NAME
    return {name: client.cookies[name].value}


@pytest.fixture
def reviewer_cookies(client, world):
    from tests.review.conftest import make_reviewer

    client.force_login(make_reviewer(world.workspace))
    name = django_settings.SESSION_COOKIE_NAME
    return {name: client.cookies[name].value}


ODD_PAGES = {"²": 400, "٣": 400, "0": 400, "-1": 400, "1.5": 400, "abc": 400, "": 400}


@pytest.mark.parametrize("path", ["/dashboard/", "/dashboard/access/"])
def test_an_odd_page_number_on_the_dashboard_is_400_or_404(live_server, signed_in_cookies, path):
    def status(page):
        url = f"{live_server.url}{path}"
        return httpx2.get(url, params={"page": page}, cookies=signed_in_cookies).status_code

    assert {page: status(page) for page in ODD_PAGES} == ODD_PAGES
    assert status("9" * 40) == 404  # No page is that far; int() would refuse 5,000 digits.
    assert status("1") == status("7") == 200  # Past the end: the last page.


def test_an_odd_page_number_in_the_review_queue_is_400_or_404(live_server, reviewer_cookies):
    def status(page):
        url = f"{live_server.url}/review/"
        return httpx2.get(url, params={"page": page}, cookies=reviewer_cookies).status_code

    assert {page: status(page) for page in ODD_PAGES} == ODD_PAGES
    assert status("9" * 5000) == 404
    assert status("3") == 200


def _in_one_minute():
    return time_machine.travel(timezone.now().replace(second=1), tick=True)


def test_invalid_keys_are_rate_limited_per_ip(world, settings):
    settings.MEMORYHUB_INVALID_KEY_LIMIT_PER_MINUTE = 3
    guesser = Http(world.agent_http.base_url, "mh_guess")
    with _in_one_minute():
        statuses = [guesser.get("/profile", user="alice").status_code for _ in range(4)]
        refused = guesser.get("/profile", user="alice")
        # The IP's budget of failures is spent, not the real keys' budgets.
        assert world.agent_http.get("/profile", user="alice").status_code == 200
    assert statuses == [401, 401, 401, 429]
    assert refused.json()["code"] == "rate_limited"
    assert 1 <= int(refused.headers["Retry-After"]) <= 60


def test_invalid_keys_at_the_mcp_endpoint_share_the_ip_limit(world, asgi_url, settings):
    settings.MEMORYHUB_INVALID_KEY_LIMIT_PER_MINUTE = 2
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    headers = {**MCP_HEADERS, "Authorization": "Bearer mh_guess"}
    with _in_one_minute():
        api = Http(asgi_url, "mh_guess").get("/profile", user="alice").status_code
        mcp = [
            httpx2.post(f"{asgi_url}/mcp", json=call, headers=headers, timeout=30) for _ in range(2)
        ]
    assert [api, *(r.status_code for r in mcp)] == [401, 401, 429]
    assert mcp[-1].json()["code"] == "rate_limited"
    assert "retry-after" in mcp[-1].headers


def test_personal_keys_share_their_users_rate_budget(world, settings):
    settings.MEMORYHUB_RATE_LIMIT_PER_MINUTE = 4
    second_key = Http(
        world.alice_http.base_url, create_personal_key(user=world.alice, name="b").raw_key
    )
    bobs_key = Http(
        world.alice_http.base_url, create_personal_key(user=world.bob, name="c").raw_key
    )
    with _in_one_minute():
        statuses = [
            key.get("/profile", user="alice").status_code
            for key in (world.alice_http, second_key, world.alice_http, second_key, second_key)
        ]
        assert bobs_key.get("/profile", user="bob").status_code == 200
        assert world.agent_http.get("/profile", user="alice").status_code == 200
    assert statuses == [200, 200, 200, 200, 429]


def test_an_agents_keys_share_the_agents_rate_budget(world, settings):
    settings.MEMORYHUB_RATE_LIMIT_PER_MINUTE = 2
    # Registering the same agent again issues a second key of the same agent.
    _, issued = create_agent(workspace=world.workspace, name=world.agent.name)
    second_key = Http(world.agent_http.base_url, issued.raw_key)
    with _in_one_minute():
        statuses = [
            key.get("/profile", user="alice").status_code
            for key in (world.agent_http, second_key, second_key)
        ]
        assert world.other_agent_http.get("/profile", user="alice").status_code == 200
    assert statuses == [200, 200, 429]
