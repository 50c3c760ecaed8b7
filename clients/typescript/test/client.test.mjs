// The built client (dist/) against openapi.json and a live server: MEMORYHUB_URL, MEMORYHUB_KEY
// (tests/clients/test_typescript_client.py starts the server and sets them).
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import {
  InvalidInputError,
  MemoryHub,
  NotAuthenticatedError,
  NotFoundError,
  OPERATIONS,
  PermissionDeniedError,
  RateLimitedError,
  TransportError,
} from "../dist/index.js";

const url = process.env.MEMORYHUB_URL;
const key = process.env.MEMORYHUB_KEY;
const live = { skip: url && key ? false : "MEMORYHUB_URL and MEMORYHUB_KEY are not set" };
const noWait = async () => {};

test("every operation of openapi.json has a client method, and no other", () => {
  const schema = JSON.parse(readFileSync(new URL("../openapi.json", import.meta.url), "utf8"));
  const inSchema = Object.entries(schema.paths).flatMap(([path, methods]) =>
    Object.keys(methods).map((method) => `${method.toUpperCase()} ${path.replace(/^\/api\/v1/, "")}`),
  );
  const inClient = Object.values(OPERATIONS).map(([method, path]) => `${method} ${path}`);
  assert.deepEqual([...inClient].sort(), [...inSchema].sort());
  for (const name of Object.keys(OPERATIONS)) {
    assert.equal(typeof MemoryHub.prototype[name], "function", name);
  }
});

test("an agent loop runs through the client", live, async () => {
  const hub = new MemoryHub({ baseUrl: url, key });
  const user = await hub.createUser({ external_id: "ts-1", display_name: "Dana" });
  assert.equal(user.external_id, "ts-1");
  const peanuts = await hub.remember({
    user: "ts-1",
    kind: "fact",
    content: "Dana is allergic to peanuts",
    importance: "high",
  });
  await hub.rememberMany({
    user: "ts-1",
    items: [0, 1, 2, 3].map((n) => ({ kind: "preference", content: `Dana likes tea ${n}` })),
  });
  const every = [];
  for await (const memory of hub.iterMemories({ user: "ts-1", limit: 2 })) every.push(memory.id);
  assert.equal(every.length, 5);
  assert.equal(every.at(-1), peanuts.id);
  const found = await hub.search({ user: "ts-1", query: "what food is dangerous for Dana?", k: 1 });
  assert.deepEqual(
    found.results.map((m) => m.id),
    [peanuts.id],
  );
  const session = await hub.startSession({ user: "ts-1" });
  assert.equal((await hub.addMessage(session.id, { role: "user", content: "A snack?" })).seq, 1);
  const context = await hub.getContext({ user: "ts-1", message: "A snack?", session: session.id });
  assert.ok(context.blocks.some((block) => block.text.includes("peanuts")));
  assert.equal((await hub.endSession(session.id)).extraction_status, "queued");
  const answer = await hub.reportAnswer({
    user: "ts-1",
    question: "Snack?",
    answer: "Rice crackers",
    signals: { retrieval: 0.9, policy: 1, completeness: 0.9, memory: 0.9 },
  });
  assert.equal((await hub.answerFeedback(answer.id, { value: "down" })).captured, true);
  const receipt = await hub.forget({ user: "ts-1", memory_ids: [peanuts.id] });
  assert.equal(receipt.forgotten, 1);
});

test("errors are typed and carry the API code", live, async () => {
  const hub = new MemoryHub({ baseUrl: `${url}/api/v1`, key });
  await assert.rejects(hub.getProfile({ user: "nobody" }), (error) => {
    assert.ok(error instanceof NotFoundError);
    assert.equal(error.status, 404);
    assert.equal(error.code, "not_found");
    return true;
  });
  await assert.rejects(hub.remember({ user: "ts-1", kind: "wish", content: "x" }), (error) => {
    assert.ok(error instanceof InvalidInputError);
    assert.equal(error.code, "invalid_input");
    assert.equal(error.errors[0].loc.at(-1), "kind");
    return true;
  });
  await hub.createUser({ external_id: "ts-2" });
  await assert.rejects(
    hub.remember({ user: "ts-2", kind: "fact", content: "x", source: "user" }),
    (error) => error instanceof PermissionDeniedError && error.code === "forbidden",
  );
  const stranger = new MemoryHub({ baseUrl: url, key: "mh_wrong" });
  await assert.rejects(
    stranger.getProfile({ user: "nobody" }),
    (error) => error instanceof NotAuthenticatedError && error.code === "not_authenticated",
  );
});

test("a memory write whose answer was lost is retried with its generated key", live, async () => {
  const bodies = [];
  const dropped = new Set();
  // Sends every request, but loses the answer to the first write on each path but /users.
  const losingFetch = async (request) => {
    const path = new URL(request.url).pathname;
    const body = request.method === "POST" ? await request.clone().text() : "";
    const response = await fetch(request);
    if (request.method === "POST" && !path.endsWith("/users")) {
      bodies.push(body);
      if (!dropped.has(path)) {
        dropped.add(path);
        await response.text();
        throw new TypeError("fetch failed: connection reset");
      }
    }
    return response;
  };
  const hub = new MemoryHub({ baseUrl: url, key, fetch: losingFetch, sleep: noWait });
  await hub.createUser({ external_id: "ts-3" });
  const memory = await hub.remember({ user: "ts-3", kind: "fact", content: "Dana lives in Lyon" });
  const ids = [];
  for await (const item of hub.iterMemories({ user: "ts-3" })) ids.push(item.id);
  assert.deepEqual(ids, [memory.id]);
  const [lost, retried] = bodies.map((body) => JSON.parse(body));
  assert.equal(lost.idempotency_key, retried.idempotency_key);
  assert.match(lost.idempotency_key, /^mhc-/);
  // Without a key the client cannot know whether the server did it: it says so, no retry.
  await assert.rejects(hub.startSession({ user: "ts-3" }), TransportError);
});

test("a 429 is retried after its Retry-After, a quota reached (no Retry-After) is not", async () => {
  const answers = [
    [429, { detail: "slow down", code: "rate_limited" }, { "Retry-After": "2" }],
    [200, { facts: [], preferences: [], procedures: [] }, {}],
    [429, { detail: "MEMORYHUB_QUOTA_MEMORIES_PER_USER reached", code: "quota_exceeded" }, {}],
  ];
  const waits = [];
  let calls = 0;
  const hub = new MemoryHub({
    baseUrl: "http://127.0.0.1:9",
    key: "mh_test",
    sleep: async (seconds) => waits.push(seconds),
    fetch: async () => {
      const [status, body, headers] = answers[calls++];
      return new Response(JSON.stringify(body), {
        status,
        headers: { "Content-Type": "application/json", ...headers },
      });
    },
  });
  assert.deepEqual((await hub.getProfile({ user: "u-1" })).facts, []);
  assert.deepEqual(waits, [2]);
  await assert.rejects(
    hub.remember({ user: "u-1", kind: "fact", content: "One too many" }),
    (error) => error instanceof RateLimitedError && error.code === "quota_exceeded",
  );
  assert.equal(calls, 3);
});
