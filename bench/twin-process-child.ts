/** The child of bench/twin-process.ts: starts the twin it is sent, then answers for it until told to stop. */

import type { TwinSpec } from '../lib/twin/spec.ts';
import { type RunningTwin, startTwin } from '../lib/twin/twin.ts';
import type { TwinMessage, TwinRequest } from './twin-process.ts';

const send = (m: TwinMessage): void => {
  process.send?.(m);
};

let twin: RunningTwin | undefined;

async function answer(req: TwinRequest): Promise<void> {
  if (!twin) return;
  if (req.op === 'stats') return send({ id: req.id, result: twin.api.stats() });
  if (req.op === 'cpu') {
    const used = process.cpuUsage();
    return send({ id: req.id, result: (used.user + used.system) / 1e6 });
  }
  await twin.stop();
  // Exit once the answer is out: a client's socket left open must not keep the twin's process alive.
  process.send?.({ id: req.id, result: null } satisfies TwinMessage, () => process.exit(0));
}

process.once('message', (start: { spec: TwinSpec; stateDir: string }) => {
  startTwin(start)
    .then((started) => {
      twin = started;
      process.on('message', (req: TwinRequest) => void answer(req));
      send({ ready: started.kubeconfigPath });
    })
    .catch((err: unknown) => {
      send({ failed: (err as Error).message });
      process.exit(1);
    });
});
