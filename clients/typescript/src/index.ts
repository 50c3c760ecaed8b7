export { API_PREFIX, MemoryHub, OPERATIONS } from "./client.js";
export type { MemoryHubOptions, Schemas } from "./client.js";
export * from "./errors.js";
export { DEFAULT_RETRY, parseRetryAfter, retryDelay } from "./retry.js";
export type { RetryPolicy } from "./retry.js";
export type { components, operations, paths } from "./schema.js";
