// One registry of every API error: HTTP status and the `error` string of the envelope.
// The daemon throws ApiError with a code from here; the CLI maps statuses to exit codes
// from the same table, so both sides share one vocabulary.

export const API_ERRORS = {
  BAD_REQUEST: { status: 400, error: 'bad request' },
  INVALID_JSON: { status: 400, error: 'invalid json' },
  NOT_AUTHENTICATED: { status: 401, error: 'not authenticated' },
  INVALID_CREDENTIALS: { status: 401, error: 'invalid credentials' },
  TWO_FACTOR_REQUIRED: { status: 401, error: '2fa_required' },
  INVALID_TOTP: { status: 401, error: 'invalid totp code' },
  INVALID_TOKEN: { status: 400, error: 'invalid token' },
  FORBIDDEN: { status: 403, error: 'forbidden' },
  JWT_REQUIRED: { status: 403, error: 'jwt required' },
  NOT_FOUND: { status: 404, error: 'not found' },
  METHOD_NOT_ALLOWED: { status: 405, error: 'method not allowed' },
  REQUEST_TIMEOUT: { status: 408, error: 'request timeout' },
  CONFLICT: { status: 409, error: 'conflict' },
  PAYLOAD_TOO_LARGE: { status: 413, error: 'payload too large' },
  UNSUPPORTED_MEDIA_TYPE: { status: 415, error: 'unsupported media type' },
  VALIDATION_FAILED: { status: 422, error: 'validation failed' },
  RATE_LIMITED: { status: 429, error: 'rate limit exceeded' },
  TOO_MANY_ATTEMPTS: { status: 429, error: 'too_many_attempts' },
  HEADERS_TOO_LARGE: { status: 431, error: 'request header fields too large' },
  INTERNAL: { status: 500, error: 'internal error' },
  STORAGE_UNAVAILABLE: { status: 503, error: 'storage unavailable' },
  SHUTTING_DOWN: { status: 503, error: 'shutting down' },
  NOT_READY: { status: 503, error: 'not ready' },
} as const;

export type ApiErrorCode = keyof typeof API_ERRORS;

/**
 * An error the API answers with its envelope.
 *
 * @example
 * throw new ApiError('NOT_FOUND', 'webhook 7 not found');
 */
export class ApiError extends Error {
  readonly code: ApiErrorCode;
  readonly statusCode: number;
  readonly error: string;
  readonly data: unknown;
  readonly headers: Record<string, string>;

  constructor(
    code: ApiErrorCode,
    message: string,
    options: { data?: unknown; headers?: Record<string, string> } = {},
  ) {
    super(message);
    this.name = 'ApiError';
    this.code = code;
    this.statusCode = API_ERRORS[code].status;
    this.error = API_ERRORS[code].error;
    this.data = options.data ?? null;
    this.headers = options.headers ?? {};
  }
}

/** CLI exit codes of CONTRACT section 5. */
export const EXIT = { OK: 0, ERROR: 1, USAGE: 2, AUTH: 4 } as const;

/**
 * The exit code the CLI uses for an API answer with this status (and `error`): a login lockout
 * (429 `too_many_attempts`) is authentication refused, like 401 and 403.
 */
export function exitCodeForStatus(status: number, error?: string): number {
  if (status === 429 && error === 'too_many_attempts') return EXIT.AUTH;
  return status === 401 || status === 403 ? EXIT.AUTH : EXIT.ERROR;
}
