/**
 * Writing answers: JSON objects, `Status` failures and plain-text health checks, with the headers the real
 * API server sends (Content-Type, and Retry-After on 429 as its max-in-flight/APF filters do).
 */
import type { ServerResponse } from 'node:http';
import { type Status, StatusError } from '../errors.ts';

export function sendJson(
  res: ServerResponse,
  code: number,
  body: unknown,
  contentType = 'application/json',
): void {
  const text = JSON.stringify(body);
  res.writeHead(code, {
    'Content-Type': contentType,
    'Content-Length': Buffer.byteLength(text),
    'Cache-Control': 'no-cache, private',
  });
  res.end(text);
}

export function sendText(res: ServerResponse, code: number, text: string): void {
  res.writeHead(code, {
    'Content-Type': 'text/plain; charset=utf-8',
    'Content-Length': Buffer.byteLength(text),
    'X-Content-Type-Options': 'nosniff',
  });
  res.end(text);
}

/** The `Status` for any failure: a StatusError as it is, anything else an InternalError (500). */
export function statusOf(err: unknown): Status {
  if (err instanceof StatusError) return err.toStatus();
  const message = err instanceof Error ? err.message : String(err);
  // apimachinery's NewInternalError: "Internal error occurred: <err>" with the error as the only cause.
  return new StatusError('InternalError', `Internal error occurred: ${message}`, {
    causes: [{ message }],
  }).toStatus();
}

export function sendStatus(res: ServerResponse, err: unknown): void {
  const status = statusOf(err);
  const retryAfter = status.details?.retryAfterSeconds;
  if (retryAfter !== undefined) res.setHeader('Retry-After', String(retryAfter));
  sendJson(res, status.code, status);
}
