// MemoryHub: every API operation as a typed method over openapi-fetch, with retries that honour
// Retry-After, generated idempotency keys for memory writes, paging and typed errors.

import createClient, { type Client } from "openapi-fetch";

import { errorFor, TransportError } from "./errors.js";
import { DEFAULT_RETRY, parseRetryAfter, RETRY_STATUSES, retryDelay, type RetryPolicy } from "./retry.js";
import type { components, operations, paths } from "./schema.js";

export type Schemas = components["schemas"];
type Json = Record<string, unknown>;
type GetQuery<P extends keyof paths> = paths[P] extends {
  get: { parameters: { query?: infer Q } };
}
  ? NonNullable<Q>
  : never;
type Scope = Schemas["ScopeIn"];

export const API_PREFIX = "/api/v1";

/** Each method's HTTP method and path; a test fails when they and openapi.json disagree. */
export const OPERATIONS = {
  createUser: ["POST", "/users"],
  getUser: ["GET", "/users/{external_id}"],
  createUserLink: ["POST", "/users/{external_id}/link"],
  remember: ["POST", "/memories"],
  rememberMany: ["POST", "/memories/batch"],
  listMemories: ["GET", "/memories"],
  getMemory: ["GET", "/memories/{memory_id}"],
  editMemory: ["PATCH", "/memories/{memory_id}"],
  deleteMemory: ["DELETE", "/memories/{memory_id}"],
  memoryHistory: ["GET", "/memories/{memory_id}/history"],
  export: ["GET", "/export"],
  forget: ["POST", "/forget"],
  getForgetTask: ["GET", "/forget/tasks/{task_id}"],
  addJournalEntry: ["POST", "/journal"],
  listJournal: ["GET", "/journal"],
  resolveJournalEntry: ["POST", "/journal/{entry_id}/resolve"],
  getProfile: ["GET", "/profile"],
  listOpenItems: ["GET", "/open-items"],
  startSession: ["POST", "/sessions"],
  addMessage: ["POST", "/sessions/{session_id}/messages"],
  endSession: ["POST", "/sessions/{session_id}/end"],
  putWorkingMemory: ["PUT", "/sessions/{session_id}/working-memory"],
  getWorkingMemory: ["GET", "/sessions/{session_id}/working-memory"],
  search: ["POST", "/search"],
  getContext: ["POST", "/context"],
  reportAnswer: ["POST", "/answers"],
  answerFeedback: ["POST", "/answers/{answer_id}/feedback"],
  proposeKnowledge: ["POST", "/knowledge/candidates"],
  graphInsights: ["GET", "/graph/insights"],
  listWebhooks: ["GET", "/webhooks"],
  createWebhook: ["POST", "/webhooks"],
  rotateWebhookSecret: ["POST", "/webhooks/{webhook_id}/rotate"],
  disableWebhook: ["POST", "/webhooks/{webhook_id}/disable"],
  enableWebhook: ["POST", "/webhooks/{webhook_id}/enable"],
  listWebhookDeliveries: ["GET", "/webhooks/{webhook_id}/deliveries"],
  replayWebhookDelivery: ["POST", "/webhooks/deliveries/{delivery_id}/replay"],
  listReviewCandidates: ["GET", "/review/candidates"],
  getReviewCandidate: ["GET", "/review/candidates/{candidate_id}"],
  approveCandidate: ["POST", "/review/candidates/{candidate_id}/approve"],
  rejectCandidate: ["POST", "/review/candidates/{candidate_id}/reject"],
  answerForUser: ["POST", "/review/candidates/{candidate_id}/answer-for-user"],
  leaveToUser: ["POST", "/review/candidates/{candidate_id}/needs-user"],
  importFile: ["POST", "/imports"],
  getImport: ["GET", "/imports/{import_id}"],
  keepImported: ["POST", "/imports/{import_id}/keep"],
  discardImported: ["POST", "/imports/{import_id}/discard"],
} as const;

// Writes that are safe to send twice: they carry an idempotency key, only read, or are
// create-or-get / set-to-a-value. Any other write is not resent after a broken connection.
const REPEATABLE_POSTS = [
  /\/memories$/,
  /\/memories\/batch$/,
  /\/search$/,
  /\/context$/,
  /\/users$/,
  /\/sessions\/[^/]+\/end$/,
  /\/journal\/[^/]+\/resolve$/,
];

function isRepeatable(request: Request): boolean {
  if (request.method === "GET" || request.method === "PUT") return true;
  const path = new URL(request.url).pathname;
  return request.method === "POST" && REPEATABLE_POSTS.some((pattern) => pattern.test(path));
}

export interface MemoryHubOptions {
  /** The server, e.g. http://127.0.0.1:8000 (`/api/v1` may be given or left out). */
  baseUrl: string;
  /** An agent key or a personal access key (`mh_…`). */
  key: string;
  retry?: Partial<RetryPolicy>;
  /** Waits between tries, in seconds (for tests; defaults to a timer). */
  sleep?: (seconds: number) => Promise<void>;
  fetch?: (request: Request) => Promise<Response>;
}

/** Fetch that retries 429 and 503 after Retry-After (or backoff), and repeatable requests after
 * a broken connection. 429 and 503 are answered before or instead of doing the work; a 429
 * without Retry-After (a quota reached) does not pass in seconds and is not retried. */
function retryingFetch(
  policy: RetryPolicy,
  sleep: (seconds: number) => Promise<void>,
  send: (request: Request) => Promise<Response>,
): (request: Request) => Promise<Response> {
  return async (request) => {
    for (let attempt = 1; ; attempt++) {
      let wait: number | null;
      try {
        const response = await send(request.clone());
        if (!RETRY_STATUSES.has(response.status)) return response;
        const retryAfter = parseRetryAfter(response.headers.get("Retry-After"));
        if (response.status === 429 && retryAfter === null) return response;
        wait = retryDelay(policy, attempt, retryAfter);
        if (wait === null) return response;
        await response.body?.cancel();
      } catch (error) {
        wait = isRepeatable(request) ? retryDelay(policy, attempt, null) : null;
        if (wait === null) {
          throw new TransportError(`${request.method} ${request.url}: ${String(error)}`, {
            cause: error,
          });
        }
      }
      await sleep(wait);
    }
  };
}

async function unwrap<T>(
  pending: Promise<{ data?: T; error?: unknown; response: Response }>,
): Promise<T> {
  const { data, error, response } = await pending;
  if (!response.ok) {
    throw errorFor(response.status, error, parseRetryAfter(response.headers.get("Retry-After")));
  }
  return data as T;
}

function newIdempotencyKey(): string {
  return `mhc-${crypto.randomUUID()}`;
}

export class MemoryHub {
  /** The typed openapi-fetch client underneath, for anything the methods do not cover. */
  readonly api: Client<paths>;

  constructor(options: MemoryHubOptions) {
    const root = options.baseUrl.replace(/\/+$/, "").replace(/\/api\/v1$/, "");
    const policy = { ...DEFAULT_RETRY, ...options.retry };
    const sleep =
      options.sleep ?? ((seconds: number) => new Promise<void>((r) => setTimeout(r, seconds * 1000)));
    this.api = createClient<paths>({
      baseUrl: root,
      headers: { Authorization: `Bearer ${options.key}` },
      fetch: retryingFetch(policy, sleep, options.fetch ?? ((request) => fetch(request))),
    });
  }

  // Users

  /** Create an end user of the agent's workspace, or get the one with this external_id. */
  createUser(body: Schemas["UserIn"]) {
    return unwrap(this.api.POST("/api/v1/users", { body }));
  }

  /** One user by external_id or UUID; `me` is a personal key's own user. */
  getUser(externalId = "me") {
    return unwrap(
      this.api.GET("/api/v1/users/{external_id}", { params: { path: { external_id: externalId } } }),
    );
  }

  /** A one-time link that lets the person's login reach this user. */
  createUserLink(externalId: string, body: Schemas["UserLinkIn"]) {
    return unwrap(
      this.api.POST("/api/v1/users/{external_id}/link", {
        params: { path: { external_id: externalId } },
        body,
      }),
    );
  }

  // Memories

  /** Remember one item; an idempotency key is generated when none is given, so a retry after
   * a lost answer returns the first write instead of storing it twice. */
  remember(body: Schemas["MemoryIn"]) {
    const idempotency_key = body.idempotency_key ?? newIdempotencyKey();
    return unwrap(this.api.POST("/api/v1/memories", { body: { ...body, idempotency_key } }));
  }

  /** Remember several items, all or none (idempotency key generated as for `remember`). */
  rememberMany(body: Schemas["MemoryBatchIn"]) {
    const idempotency_key = body.idempotency_key ?? newIdempotencyKey();
    return unwrap(this.api.POST("/api/v1/memories/batch", { body: { ...body, idempotency_key } }));
  }

  /** One page, newest first: `items` and `next_cursor` (see `iterMemories`). */
  listMemories(query: GetQuery<"/api/v1/memories"> = {}) {
    return unwrap(this.api.GET("/api/v1/memories", { params: { query } }));
  }

  /** Every memory, newest first, fetching pages as the iteration goes. */
  async *iterMemories(
    query: Omit<GetQuery<"/api/v1/memories">, "cursor"> = {},
  ): AsyncGenerator<Schemas["MemoryOut"]> {
    let cursor: string | null | undefined;
    do {
      const page = await this.listMemories({ ...query, cursor });
      yield* page.items;
      cursor = page.next_cursor;
    } while (cursor);
  }

  getMemory(memoryId: string, scope: Scope = {}) {
    return unwrap(
      this.api.GET("/api/v1/memories/{memory_id}", {
        params: { path: { memory_id: memoryId }, query: scope },
      }),
    );
  }

  /** Every version of a memory, oldest first, with who changed it, why and when. */
  memoryHistory(memoryId: string, scope: Scope = {}) {
    return unwrap(
      this.api.GET("/api/v1/memories/{memory_id}/history", {
        params: { path: { memory_id: memoryId }, query: scope },
      }),
    );
  }

  /** Everything of the user as the dashboard's export document (for a personal key, or an
   * agent the user allowed to export; 403 otherwise). */
  export(scope: Scope = {}) {
    return unwrap(this.api.GET("/api/v1/export", { params: { query: scope } }));
  }

  /** Change a memory's content, importance or payload (the previous content is kept). */
  editMemory(memoryId: string, body: Schemas["MemoryPatchIn"], scope: Scope = {}) {
    return unwrap(
      this.api.PATCH("/api/v1/memories/{memory_id}", {
        params: { path: { memory_id: memoryId }, query: scope },
        body,
      }),
    );
  }

  deleteMemory(memoryId: string, scope: Scope = {}) {
    return unwrap(
      this.api.DELETE("/api/v1/memories/{memory_id}", {
        params: { path: { memory_id: memoryId }, query: scope },
      }),
    );
  }

  /** Forget for good by ids, query, topic or period; a large one comes back as a task (202). */
  forget(body: Schemas["ForgetIn"]) {
    return unwrap(this.api.POST("/api/v1/forget", { body }));
  }

  getForgetTask(taskId: string, scope: Scope = {}) {
    return unwrap(
      this.api.GET("/api/v1/forget/tasks/{task_id}", {
        params: { path: { task_id: taskId }, query: scope },
      }),
    );
  }

  // Journal

  addJournalEntry(body: Schemas["JournalIn"]) {
    return unwrap(this.api.POST("/api/v1/journal", { body }));
  }

  listJournal(query: GetQuery<"/api/v1/journal"> = {}) {
    return unwrap(this.api.GET("/api/v1/journal", { params: { query } }));
  }

  resolveJournalEntry(entryId: string, scope: Scope = {}) {
    return unwrap(
      this.api.POST("/api/v1/journal/{entry_id}/resolve", {
        params: { path: { entry_id: entryId }, query: scope },
      }),
    );
  }

  // Profile

  /** The profile; with `as_of`, as it was at that moment. */
  getProfile(query: GetQuery<"/api/v1/profile"> = {}) {
    return unwrap(this.api.GET("/api/v1/profile", { params: { query } }));
  }

  listOpenItems(scope: Scope = {}) {
    return unwrap(this.api.GET("/api/v1/open-items", { params: { query: scope } }));
  }

  // Sessions

  startSession(body: Schemas["SessionIn"] = {}) {
    return unwrap(this.api.POST("/api/v1/sessions", { body }));
  }

  addMessage(sessionId: string, body: Schemas["MessageIn"]) {
    return unwrap(
      this.api.POST("/api/v1/sessions/{session_id}/messages", {
        params: { path: { session_id: sessionId } },
        body,
      }),
    );
  }

  /** End the session; its extraction is queued (ending it again changes nothing). */
  endSession(sessionId: string) {
    return unwrap(
      this.api.POST("/api/v1/sessions/{session_id}/end", {
        params: { path: { session_id: sessionId } },
      }),
    );
  }

  putWorkingMemory(sessionId: string, data: Json) {
    return unwrap(
      this.api.PUT("/api/v1/sessions/{session_id}/working-memory", {
        params: { path: { session_id: sessionId } },
        body: data,
      }),
    );
  }

  getWorkingMemory(sessionId: string) {
    return unwrap(
      this.api.GET("/api/v1/sessions/{session_id}/working-memory", {
        params: { path: { session_id: sessionId } },
      }),
    );
  }

  // Recall

  search(body: Schemas["SearchIn"]) {
    return unwrap(this.api.POST("/api/v1/search", { body }));
  }

  /** The assembled context for a message: ordered blocks, untrusted ones fenced. */
  getContext(body: Schemas["ContextIn"]) {
    return unwrap(this.api.POST("/api/v1/context", { body }));
  }

  // Answers

  reportAnswer(body: Schemas["AnswerIn"]) {
    return unwrap(this.api.POST("/api/v1/answers", { body }));
  }

  answerFeedback(answerId: string, body: Schemas["FeedbackIn"]) {
    return unwrap(
      this.api.POST("/api/v1/answers/{answer_id}/feedback", {
        params: { path: { answer_id: answerId } },
        body,
      }),
    );
  }

  proposeKnowledge(body: Schemas["KnowledgeCandidateIn"]) {
    return unwrap(this.api.POST("/api/v1/knowledge/candidates", { body }));
  }

  graphInsights(query: GetQuery<"/api/v1/graph/insights"> = {}) {
    return unwrap(this.api.GET("/api/v1/graph/insights", { params: { query } }));
  }

  // Webhooks (the agent's workspace)

  listWebhooks() {
    return unwrap(this.api.GET("/api/v1/webhooks"));
  }

  /** Add an endpoint; the answer holds its `whsec_` secret, shown this once. */
  createWebhook(body: Schemas["WebhookIn"]) {
    return unwrap(this.api.POST("/api/v1/webhooks", { body }));
  }

  /** A new secret; the old one keeps signing beside it for a grace period. */
  rotateWebhookSecret(webhookId: string) {
    return unwrap(
      this.api.POST("/api/v1/webhooks/{webhook_id}/rotate", {
        params: { path: { webhook_id: webhookId } },
      }),
    );
  }

  disableWebhook(webhookId: string) {
    return unwrap(
      this.api.POST("/api/v1/webhooks/{webhook_id}/disable", {
        params: { path: { webhook_id: webhookId } },
      }),
    );
  }

  enableWebhook(webhookId: string) {
    return unwrap(
      this.api.POST("/api/v1/webhooks/{webhook_id}/enable", {
        params: { path: { webhook_id: webhookId } },
      }),
    );
  }

  listWebhookDeliveries(
    webhookId: string,
    query: GetQuery<"/api/v1/webhooks/{webhook_id}/deliveries"> = {},
  ) {
    return unwrap(
      this.api.GET("/api/v1/webhooks/{webhook_id}/deliveries", {
        params: { path: { webhook_id: webhookId }, query },
      }),
    );
  }

  /** Send a failed or dead delivery again, with the same webhook-id. */
  replayWebhookDelivery(deliveryId: number) {
    return unwrap(
      this.api.POST("/api/v1/webhooks/deliveries/{delivery_id}/replay", {
        params: { path: { delivery_id: deliveryId } },
      }),
    );
  }

  // Review (a reviewer key, minted on the review pages)

  /** Waiting low-confidence answers and proposed facts, most urgent first, a page. */
  listReviewCandidates(query: GetQuery<"/api/v1/review/candidates"> = {}) {
    return unwrap(this.api.GET("/api/v1/review/candidates", { params: { query } }));
  }

  getReviewCandidate(candidateId: string) {
    return unwrap(
      this.api.GET("/api/v1/review/candidates/{candidate_id}", {
        params: { path: { candidate_id: candidateId } },
      }),
    );
  }

  /** Publish it (as edited) to the knowledge base; 409 when already decided. */
  approveCandidate(candidateId: string, body: Schemas["ApproveIn"] = {}) {
    return unwrap(
      this.api.POST("/api/v1/review/candidates/{candidate_id}/approve", {
        params: { path: { candidate_id: candidateId } },
        body,
      }),
    );
  }

  /** Reject it with a reason; 409 when already decided. */
  rejectCandidate(candidateId: string, body: Schemas["RejectIn"]) {
    return unwrap(
      this.api.POST("/api/v1/review/candidates/{candidate_id}/reject", {
        params: { path: { candidate_id: candidateId } },
        body,
      }),
    );
  }

  /** Write the right answer into the user's memory, for them to confirm (409 if paused). */
  answerForUser(candidateId: string, body: Schemas["UserAnswerIn"]) {
    return unwrap(
      this.api.POST("/api/v1/review/candidates/{candidate_id}/answer-for-user", {
        params: { path: { candidate_id: candidateId } },
        body,
      }),
    );
  }

  /** Leave a question only the user can answer to them, as an open item (409 if paused). */
  leaveToUser(candidateId: string) {
    return unwrap(
      this.api.POST("/api/v1/review/candidates/{candidate_id}/needs-user", {
        params: { path: { candidate_id: candidateId } },
      }),
    );
  }

  // Imports

  /** Upload a file to import; the same file again is the same import. */
  importFile(
    file: Blob,
    query: NonNullable<operations["memoryhub_api_imports_start_import"]["parameters"]["query"]> = {},
  ) {
    return unwrap(
      this.api.POST("/api/v1/imports", {
        params: { query },
        body: { file: file as unknown as string },
        bodySerializer: (body) => {
          const form = new FormData();
          form.append("file", body.file as unknown as Blob, "import.json");
          return form;
        },
      }),
    );
  }

  /** An import's progress and receipt (counts by kind, items skipped and why). */
  getImport(importId: string, query: GetQuery<"/api/v1/imports/{import_id}"> = {}) {
    return unwrap(
      this.api.GET("/api/v1/imports/{import_id}", {
        params: { path: { import_id: importId }, query },
      }),
    );
  }

  /** Keep the import's memories waiting for review: all, or the ones named. */
  keepImported(importId: string, body: Schemas["ReviewIn"] = {}) {
    return unwrap(
      this.api.POST("/api/v1/imports/{import_id}/keep", {
        params: { path: { import_id: importId } },
        body,
      }),
    );
  }

  /** Delete the import's memories waiting for review: all, or the ones named. */
  discardImported(importId: string, body: Schemas["ReviewIn"] = {}) {
    return unwrap(
      this.api.POST("/api/v1/imports/{import_id}/discard", {
        params: { path: { import_id: importId } },
        body,
      }),
    );
  }
}
