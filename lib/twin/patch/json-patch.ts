/**
 * JSON patch (RFC 6902) as the API server applies it (apiserver endpoints/handlers/patch.go,
 * jsonPatcher.applyJSPatch): a document that does not decode as a list of operations is a 400; an
 * operation that cannot be applied (failed `test`, missing path, unknown op) is a 422 Invalid whose
 * message is the generic one `NewGenericServerResponse(422, …)` produces — the real server does not
 * echo the underlying error.
 */
import jsonpatch, { type Operation } from 'fast-json-patch';
import { badRequest, StatusError } from '../errors.ts';
import type { KubeObject } from '../store.ts';
import { isObject, jsonKind } from './json-values.ts';

/** The real server's limit (patch.go maxJSONPatchOperations). */
const MAX_OPERATIONS = 10_000;

/** What Go's encoding/json says when the body is not a list of operation objects. */
function decodeError(patch: unknown): StatusError | undefined {
  if (!Array.isArray(patch)) {
    return badRequest(`json: cannot unmarshal ${goJsonKind(patch)} into Go value of type jsonpatch.Patch`);
  }
  const bad = patch.find((op) => !isObject(op));
  if (bad !== undefined) {
    return badRequest(`json: cannot unmarshal ${goJsonKind(bad)} into Go value of type jsonpatch.Operation`);
  }
  return undefined;
}

function goJsonKind(value: unknown): string {
  const kind = jsonKind(value);
  return kind === 'boolean' ? 'bool' : kind;
}

export function applyJsonPatch(current: KubeObject, patch: unknown): unknown {
  const invalidDocument = decodeError(patch);
  if (invalidDocument) throw invalidDocument;
  const ops = patch as Operation[];
  if (ops.length > MAX_OPERATIONS) {
    // The real server answers 413 RequestEntityTooLarge; errors.ts has no such reason, so the nearest 400.
    throw new StatusError(
      'BadRequest',
      `The allowed maximum operations in a JSON patch is ${MAX_OPERATIONS}, got ${ops.length}`,
    );
  }
  const document = structuredClone(current) as unknown;
  try {
    return jsonpatch.applyPatch(document, ops, true, true).newDocument;
  } catch (error) {
    if (error instanceof jsonpatch.JsonPatchError) {
      throw new StatusError('Invalid', 'the server rejected our request due to an error in our request', {});
    }
    throw error;
  }
}
