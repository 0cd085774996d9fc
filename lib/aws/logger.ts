/**
 * One JSON line per log call, for CloudWatch Logs Insights. Only the fields given are logged, and only
 * those named in SAFE_FIELDS: an event or a step's result is never logged whole, so a payload that carried
 * a secret by mistake could still not reach the logs.
 */
import { emfCount } from './metrics.ts';

const SAFE_FIELDS = [
  'step',
  'clusterId',
  'runId',
  'node',
  'kind',
  'status',
  'executionArn',
  'errorName',
  'durationMs',
] as const;
export type LogFields = Partial<Record<(typeof SAFE_FIELDS)[number], string | number>>;

export interface Logger {
  info(message: string, fields?: LogFields): void;
  error(message: string, fields?: LogFields): void;
  /** Count one of metric `name` (lib/aws/metrics.ts); dimension values are ids and outcomes, nothing else. */
  count(name: string, dimensions: Readonly<Record<string, string>>): void;
}

export function jsonLogger(
  write: (line: string) => void = (line) => process.stdout.write(`${line}\n`),
): Logger {
  const log = (level: string, message: string, fields: LogFields = {}) => {
    const safe = Object.fromEntries(SAFE_FIELDS.flatMap((k) => (k in fields ? [[k, fields[k]]] : [])));
    write(JSON.stringify({ level, message, ...safe }));
  };
  return {
    info: (message, fields) => log('info', message, fields),
    error: (message, fields) => log('error', message, fields),
    count: (name, dimensions) => write(emfCount(name, dimensions)),
  };
}

/** The ids of an event, if it has them as strings: what a log line may say about it. */
export function idsOf(event: unknown): LogFields {
  if (typeof event !== 'object' || event === null) return {};
  const e = event as Record<string, unknown>;
  const fields: Record<string, string> = {};
  for (const k of ['clusterId', 'runId', 'node'] as const) {
    if (typeof e[k] === 'string') fields[k] = e[k];
  }
  return fields;
}
