/** Asking the operator before a change: y/N at a terminal, a refusal (exit 2) anywhere else. */
import { createInterface } from 'node:readline/promises';
import { CliError, EXIT } from './exit-codes.ts';

export async function confirm(question: string): Promise<boolean> {
  if (!process.stdin.isTTY) {
    throw new CliError(
      'refusing to change a cluster without confirmation: pass --yes when not at a terminal',
      EXIT.badInput,
    );
  }
  const rl = createInterface({ input: process.stdin, output: process.stderr });
  try {
    return /^y(es)?$/i.test((await rl.question(`${question} [y/N] `)).trim());
  } finally {
    rl.close();
  }
}
