// A real 429 from the live server, retried after the Retry-After it sent. The harness
// (tests/clients/test_typescript_client.py) takes the key owner's only request slot, with a
// lease that runs out about two seconds later, and sets MEMORYHUB_SLOT_TAKEN.
import assert from "node:assert/strict";
import { test } from "node:test";

import { MemoryHub, RateLimitedError } from "../dist/index.js";

const url = process.env.MEMORYHUB_URL;
const key = process.env.MEMORYHUB_KEY;
const live = { skip: process.env.MEMORYHUB_SLOT_TAKEN ? false : "MEMORYHUB_SLOT_TAKEN is not set" };

test("a 429 is retried after the Retry-After the server sent", live, async () => {
  const waits = [];
  const sleep = (seconds) => {
    waits.push(seconds);
    return new Promise((resolve) => setTimeout(resolve, seconds * 1000));
  };
  const impatient = new MemoryHub({ baseUrl: url, key, retry: { attempts: 1 } });
  await assert.rejects(impatient.getUser("ts-9"), (error) => {
    assert.ok(error instanceof RateLimitedError);
    assert.equal(error.code, "too_many_concurrent_requests");
    assert.equal(error.retryAfter, 1);
    return true;
  });
  const hub = new MemoryHub({ baseUrl: url, key, sleep, retry: { attempts: 10 } });
  const user = await hub.getUser("ts-9");
  assert.equal(user.external_id, "ts-9");
  assert.ok(waits.length >= 1);
  assert.deepEqual(new Set(waits), new Set([1]));
});
