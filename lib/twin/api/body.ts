/**
 * Request bodies: read with the real server's size limit (3 MiB, --max-request-bytes' default for
 * resource writes) and decoded as JSON, YAML or protobuf. A body that is not an object is a 400, never a crash.
 */
import type { IncomingMessage } from 'node:http';
import { parse as parseYaml } from 'yaml';
import { badRequest, StatusError } from '../errors.ts';
import { decodeProtobufObject, PROTOBUF_MEDIA_TYPE } from './protobuf.ts';

export const MAX_BODY_BYTES = 3 * 1024 * 1024;

/** A body over the limit: answered 413, as the real server's limitedReadBody does. */
export class BodyTooLargeError extends Error {
  constructor() {
    super(`the request body is larger than ${MAX_BODY_BYTES} bytes`);
    this.name = 'BodyTooLargeError';
  }
}

export async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) throw new BodyTooLargeError();
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

export type BodyFormat = 'json' | 'yaml' | 'protobuf';

/**
 * A JSON, YAML (apply patches) or Kubernetes protobuf document; `allowArray` for JSON patches, which are
 * lists of operations.
 */
export function decodeBody(
  body: Buffer,
  format: BodyFormat,
  opts: { allowArray?: boolean } = {},
): Record<string, unknown> | unknown[] {
  if (format === 'protobuf') return decodeProtobufObject(body);
  const text = body.toString('utf8');
  let value: unknown;
  try {
    value = format === 'json' ? JSON.parse(text) : parseYaml(text);
  } catch (err) {
    const what = format === 'json' ? "couldn't decode the JSON body" : 'error decoding YAML';
    throw badRequest(`${what}: ${(err as Error).message.split('\n')[0]}`);
  }
  if (Array.isArray(value) && opts.allowArray) return value;
  if (!value || typeof value !== 'object' || Array.isArray(value)) {
    throw badRequest(
      `the body of the request must be a ${opts.allowArray ? 'JSON array or object' : 'JSON object'}`,
    );
  }
  return value as Record<string, unknown>;
}

/**
 * How to decode a create or update body, by its Content-Type: JSON, YAML, or protobuf (kubectl's typed
 * clients send one, e.g. `kubectl create configmap`); anything else gets the 415 of
 * negotiation.NegotiateInputSerializer.
 */
export function objectBodyFormat(contentType: string | undefined): BodyFormat {
  const mediaType = (contentType ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
  if (mediaType === '' || mediaType === 'application/json' || mediaType === '*/*') return 'json';
  if (mediaType === 'application/yaml') return 'yaml';
  if (mediaType === PROTOBUF_MEDIA_TYPE) return 'protobuf';
  throw new StatusError(
    'UnsupportedMediaType',
    `the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, ${PROTOBUF_MEDIA_TYPE}`,
  );
}
