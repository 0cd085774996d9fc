/**
 * API errors as the Kubernetes API server reports them: a `Status` object with `reason` and `code`.
 * See https://kubernetes.io/docs/reference/kubernetes-api/common-definitions/status/ and
 * k8s.io/apimachinery/pkg/api/errors for the reasons and codes mirrored here.
 */

export type StatusReason =
  | 'NotFound'
  | 'AlreadyExists'
  | 'Conflict'
  | 'Invalid'
  | 'BadRequest'
  | 'Unauthorized'
  | 'Forbidden'
  | 'MethodNotAllowed'
  | 'NotAcceptable'
  | 'UnsupportedMediaType'
  | 'TooManyRequests'
  | 'InternalError'
  | 'ServiceUnavailable'
  | 'Gone'
  | 'Expired'
  | 'Timeout';

export interface StatusCause {
  readonly reason?: string;
  readonly message: string;
  readonly field?: string;
}

export interface StatusDetails {
  readonly name?: string;
  readonly group?: string;
  readonly kind?: string;
  readonly causes?: readonly StatusCause[];
  readonly retryAfterSeconds?: number;
}

export interface Status {
  readonly kind: 'Status';
  readonly apiVersion: 'v1';
  readonly metadata: Record<string, never>;
  readonly status: 'Failure';
  readonly message: string;
  readonly reason: StatusReason;
  readonly details?: StatusDetails;
  readonly code: number;
}

const CODES: Record<StatusReason, number> = {
  NotFound: 404,
  AlreadyExists: 409,
  Conflict: 409,
  Invalid: 422,
  BadRequest: 400,
  Unauthorized: 401,
  Forbidden: 403,
  MethodNotAllowed: 405,
  NotAcceptable: 406,
  UnsupportedMediaType: 415,
  TooManyRequests: 429,
  InternalError: 500,
  ServiceUnavailable: 503,
  Gone: 410,
  Expired: 410,
  Timeout: 504,
};

/** An API failure that the HTTP layer turns into a `Status` response. */
export class StatusError extends Error {
  readonly reason: StatusReason;
  readonly code: number;
  readonly details: StatusDetails | undefined;

  /** `code` defaults to the reason's; a real server's Status brings its own. */
  constructor(reason: StatusReason, message: string, details?: StatusDetails, code?: number) {
    super(message);
    this.name = 'StatusError';
    this.reason = reason;
    this.code = code ?? CODES[reason] ?? 500;
    this.details = details;
  }

  toStatus(): Status {
    return {
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: this.message,
      reason: this.reason,
      ...(this.details ? { details: this.details } : {}),
      code: this.code,
    };
  }
}

/** What the API server calls an object in messages: `pods "x"`, `deployments.apps "y"`. */
function qualified(resource: { group: string; plural: string }): string {
  return resource.group ? `${resource.plural}.${resource.group}` : resource.plural;
}

export function notFound(resource: { group: string; plural: string }, name: string): StatusError {
  return new StatusError('NotFound', `${qualified(resource)} "${name}" not found`, {
    name,
    group: resource.group,
    kind: resource.plural,
  });
}

export function alreadyExists(resource: { group: string; plural: string }, name: string): StatusError {
  return new StatusError('AlreadyExists', `${qualified(resource)} "${name}" already exists`, {
    name,
    group: resource.group,
    kind: resource.plural,
  });
}

/** The optimistic-concurrency conflict a stale `resourceVersion` gets. */
export function staleConflict(resource: { group: string; plural: string }, name: string): StatusError {
  return new StatusError(
    'Conflict',
    `Operation cannot be fulfilled on ${qualified(resource)} "${name}": the object has been modified; please apply your changes to the latest version and try again`,
    { name, group: resource.group, kind: resource.plural },
  );
}

export function invalid(
  resource: { group: string; plural: string; kind: string },
  name: string,
  causes: readonly StatusCause[],
): StatusError {
  // ToAggregate: one cause as it is, several in brackets.
  const each = causes.map((c) => (c.field ? `${c.field}: ${c.message}` : c.message));
  const summary = each.length === 1 ? each[0] : `[${each.join(', ')}]`;
  return new StatusError('Invalid', `${resource.kind} "${name}" is invalid: ${summary}`, {
    name,
    group: resource.group,
    kind: resource.kind,
    causes: causes.map((c) => ({ reason: c.reason ?? 'FieldValueInvalid', ...c })),
  });
}

export function badRequest(message: string): StatusError {
  return new StatusError('BadRequest', message);
}
