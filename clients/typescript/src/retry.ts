// When to try a request again, and how long to wait first.

/** 429: refused before any work; 503: the server (or its database) is briefly unavailable. */
export const RETRY_STATUSES = new Set([429, 503]);

export interface RetryPolicy {
  /** Tries in all, the first included. */
  attempts: number;
  /** Seconds of the first backoff when the server sends no Retry-After; doubles each time. */
  baseDelay: number;
  /** A wait over this many seconds is not waited: the error is thrown instead. */
  maxDelay: number;
}

export const DEFAULT_RETRY: RetryPolicy = { attempts: 4, baseDelay: 0.5, maxDelay: 30 };

/** Seconds to wait before try `attempt + 1`, or null to give up. Retry-After wins when sent. */
export function retryDelay(
  policy: RetryPolicy,
  attempt: number,
  retryAfter: number | null,
): number | null {
  if (attempt >= policy.attempts) return null;
  let wait: number;
  if (retryAfter !== null) {
    wait = retryAfter;
  } else {
    const backoff = policy.baseDelay * 2 ** (attempt - 1);
    wait = backoff / 2 + Math.random() * (backoff / 2);
  }
  return wait <= policy.maxDelay ? wait : null;
}

/** Seconds from a Retry-After header (delta-seconds or an HTTP date); null if absent. */
export function parseRetryAfter(value: string | null): number | null {
  if (value === null || value.trim() === "") return null;
  const seconds = Number(value.trim());
  if (Number.isFinite(seconds)) return Math.max(0, seconds);
  const when = Date.parse(value);
  return Number.isNaN(when) ? null : Math.max(0, (when - Date.now()) / 1000);
}
