/**
 * Query options of writes (CreateOptions, UpdateOptions, PatchOptions, DeleteOptions) and their validation,
 * as k8s.io/apimachinery/pkg/apis/meta/v1/validation does it: a bad option is a 422 Invalid naming the
 * options kind, e.g. `PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: …`.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { type StatusCause, StatusError } from '../errors.ts';
import type { PropagationPolicy } from '../store.ts';

type OptionsKind = 'CreateOptions' | 'UpdateOptions' | 'PatchOptions' | 'DeleteOptions';

export function invalidOptions(kind: OptionsKind, causes: readonly StatusCause[]): StatusError {
  const summary = causes.map((c) => `${c.field}: ${c.message}`).join(', ');
  return new StatusError('Invalid', `${kind}.meta.k8s.io "" is invalid: ${summary}`, {
    group: 'meta.k8s.io',
    kind,
    causes,
  });
}

/** `dryRun=All` (the only value there is); true when the write must not be stored. */
export function isDryRun(kind: OptionsKind, query: URLSearchParams, bodyDryRun?: unknown): boolean {
  const values = [...query.getAll('dryRun'), ...(Array.isArray(bodyDryRun) ? bodyDryRun.map(String) : [])];
  for (const v of values) {
    if (v !== 'All') {
      throw invalidOptions(kind, [
        {
          reason: 'FieldValueNotSupported',
          field: 'dryRun',
          message: `Unsupported value: "${v}": supported values: "All"`,
        },
      ]);
    }
  }
  return values.length > 0;
}

/** Longest fieldManager the server accepts (validation.FieldManagerMaxLength). */
const FIELD_MANAGER_MAX = 128;

/**
 * The field manager of a write: `fieldManager`, or, when absent, the User-Agent up to its first `/`
 * (handlers/rest.go prefixFromUserAgent), so `kubectl/v1.32 …` becomes `kubectl`.
 */
export function fieldManagerOf(
  kind: OptionsKind,
  query: URLSearchParams,
  headers: IncomingHttpHeaders,
): string {
  const given = query.get('fieldManager');
  if (given !== null && given.length > FIELD_MANAGER_MAX) {
    throw invalidOptions(kind, [
      {
        reason: 'FieldValueTooLong',
        field: 'fieldManager',
        message: `Too long: may not be more than ${FIELD_MANAGER_MAX} bytes`,
      },
    ]);
  }
  if (given) return given;
  return (headers['user-agent'] ?? '').split('/')[0]?.slice(0, FIELD_MANAGER_MAX) ?? '';
}

/** A Go bool query parameter (strconv.ParseBool). */
export function boolParam(query: URLSearchParams, name: string): boolean {
  const v = query.get(name);
  return v !== null && ['1', 't', 'T', 'true', 'TRUE', 'True'].includes(v);
}

/** Apply needs a field manager; `force` means something only to apply (ValidatePatchOptions). */
export function validatePatchOptions(apply: boolean, query: URLSearchParams): void {
  if (apply && !query.get('fieldManager')) {
    throw invalidOptions('PatchOptions', [
      {
        reason: 'FieldValueRequired',
        field: 'fieldManager',
        message: 'Required value: is required for apply patch',
      },
    ]);
  }
  if (!apply && boolParam(query, 'force')) {
    throw invalidOptions('PatchOptions', [
      {
        reason: 'FieldValueForbidden',
        field: 'force',
        message: 'Forbidden: may not be specified for non-apply patch',
      },
    ]);
  }
}

export interface DeleteRequestOptions {
  readonly propagationPolicy: PropagationPolicy | undefined;
  readonly preconditions: { uid?: string; resourceVersion?: string } | undefined;
  readonly dryRun: boolean;
}

const POLICIES: readonly string[] = ['Background', 'Foreground', 'Orphan'];

/** DeleteOptions from the body (kubectl, client libraries) and the query (curl-style), body first. */
export function deleteOptionsOf(body: Record<string, unknown>, query: URLSearchParams): DeleteRequestOptions {
  let policy = (body.propagationPolicy as string | undefined) ?? query.get('propagationPolicy') ?? undefined;
  const orphan =
    body.orphanDependents ??
    (query.has('orphanDependents') ? boolParam(query, 'orphanDependents') : undefined);
  if (policy !== undefined && orphan !== undefined) {
    throw invalidOptions('DeleteOptions', [
      {
        reason: 'FieldValueInvalid',
        field: 'propagationPolicy',
        message: `Invalid value: "${policy}": orphanDependents and deletionPropagation cannot be both set`,
      },
    ]);
  }
  if (orphan !== undefined) policy = orphan ? 'Orphan' : 'Background';
  if (policy !== undefined && !POLICIES.includes(policy)) {
    throw invalidOptions('DeleteOptions', [
      {
        reason: 'FieldValueNotSupported',
        field: 'propagationPolicy',
        message: `Unsupported value: "${policy}": supported values: "Foreground", "Background", "Orphan", "nil"`,
      },
    ]);
  }
  const pre = body.preconditions as { uid?: string; resourceVersion?: string } | undefined;
  return {
    propagationPolicy: policy as PropagationPolicy | undefined,
    preconditions: pre && typeof pre === 'object' ? pre : undefined,
    dryRun: isDryRun('DeleteOptions', query, body.dryRun),
  };
}
