/**
 * The functions' logger (lib/aws/logger.ts: Powertools' Logger and Metrics) with what each call writes to
 * stdout or stderr kept in `lines`, one JSON line per entry, instead of printed. Powertools writes at once,
 * so each call's output is taken as the call runs.
 */
import { type Logger, lambdaLogger } from '../../lib/aws/logger.ts';

function capturing(lines: string[], call: () => void): void {
  const streams = [process.stdout, process.stderr] as const;
  const writes = streams.map((s) => s.write);
  const take = (chunk: unknown): boolean => {
    lines.push(...String(chunk).split('\n').filter(Boolean));
    return true;
  };
  for (const s of streams) s.write = take as typeof s.write;
  try {
    call();
  } finally {
    streams.forEach((s, i) => {
      s.write = writes[i] as typeof s.write;
    });
  }
}

export function capturedLogger(lines: string[]): Logger {
  return {
    info: (message, fields) => capturing(lines, () => lambdaLogger.info(message, fields)),
    error: (message, fields) => capturing(lines, () => lambdaLogger.error(message, fields)),
    count: (name, dimensions) => capturing(lines, () => lambdaLogger.count(name, dimensions)),
  };
}
