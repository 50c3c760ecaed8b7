// The API's error answers as exceptions, one class per status, each carrying the API's `code`.

export interface ErrorBody {
  detail?: string;
  code?: string;
  errors?: Array<Record<string, unknown>> | null;
}

/** Anything this client throws. */
export class MemoryHubError extends Error {
  override name = "MemoryHubError";
}

/** The server could not be reached, or the connection broke (after the retries). */
export class TransportError extends MemoryHubError {
  override name = "TransportError";
}

/** An error answer: HTTP `status`, the stable `code` to branch on, and a human `detail`. */
export class ApiError extends MemoryHubError {
  override name = "ApiError";
  readonly status: number;
  readonly code: string;
  readonly detail: string;
  readonly errors: Array<Record<string, unknown>>;
  /** Seconds the server asked to wait (429, 503), if it said. */
  readonly retryAfter: number | null;

  constructor(status: number, body: ErrorBody, retryAfter: number | null) {
    const code = body.code ?? `http_${status}`;
    const detail = body.detail ?? "no detail";
    super(`${status} ${code}: ${detail}`);
    this.status = status;
    this.code = code;
    this.detail = detail;
    this.errors = body.errors ?? [];
    this.retryAfter = retryAfter;
  }
}

/** 400: the request could not be read. */
export class BadRequestError extends ApiError {}
/** 401: missing, unknown or revoked key. */
export class NotAuthenticatedError extends ApiError {}
/** 403: the key may not do this (`forbidden`, `agent_blocked`…). */
export class PermissionDeniedError extends ApiError {}
/** 404: no such user, mode, memory, session… within the key's reach. */
export class NotFoundError extends ApiError {}
/** 409: the request conflicts with what exists. */
export class ConflictError extends ApiError {}
/** 413: the body or a field is over the server's limit. */
export class ContentTooLargeError extends ApiError {}
/** 422: the input failed validation; `errors` lists each field's problem. */
export class InvalidInputError extends ApiError {}
/** 429: over the key owner's budget; `retryAfter` says when to come back. */
export class RateLimitedError extends ApiError {}
/** 503: briefly unavailable; `retryAfter` says when to come back. */
export class UnavailableError extends ApiError {}
/** Any other 5xx. */
export class ServerError extends ApiError {}

const BY_STATUS: Record<number, typeof ApiError> = {
  400: BadRequestError,
  401: NotAuthenticatedError,
  403: PermissionDeniedError,
  404: NotFoundError,
  409: ConflictError,
  413: ContentTooLargeError,
  422: InvalidInputError,
  429: RateLimitedError,
  503: UnavailableError,
};

/** The exception for an error answer; a body that is not the API's JSON still gets one. */
export function errorFor(status: number, body: unknown, retryAfter: number | null): ApiError {
  const errorBody: ErrorBody = typeof body === "object" && body !== null ? (body as ErrorBody) : {};
  const Class = BY_STATUS[status] ?? (status >= 500 ? ServerError : ApiError);
  return new Class(status, errorBody, retryAfter);
}
