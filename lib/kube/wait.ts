/**
 * Bounded waiting for the cluster. A step waits at most `waitMs` inside an invocation and then answers
 * NotReadyYet, which the state machine retries with backoff: a short wait inside the step costs no state
 * transitions, a long one would hold a Lambda for nothing.
 *
 * A wait can name what it waits on (`wakeOn`): a watch on it wakes the wait at each change, so the change
 * is seen in milliseconds rather than at the next poll, and the poll slows to a fallback. The watch only
 * says "look again": `check` decides, so a watch that fails or ends changes nothing but the latency.
 */
import { ClusterUnreachableError, KubeApiThrottledError, NotReadyYetError } from '../errors.ts';
import type { KubeClients } from './clients.ts';

export interface WaitOptions {
  readonly waitMs: number;
  readonly pollMs: number;
}

/** The objects whose changes may end a wait: a collection path and selectors, as for a list. */
export interface WakeOn {
  readonly clients: Pick<KubeClients, 'watch'>;
  /** e.g. `/api/v1/nodes`, `/apis/batch/v1/namespaces/kube-system/jobs`. */
  readonly path: string;
  readonly fieldSelector?: string;
  readonly labelSelector?: string;
}

/** Changes of the one object named `name` in the collection at `path`. */
export function wakeOnObject(clients: Pick<KubeClients, 'watch'>, path: string, name: string): WakeOn {
  return { clients, path, fieldSelector: `metadata.name=${name}` };
}

/** While a watch is open, polling is only the fallback for a watch that misses or drops an event. */
const WATCHED_POLL_MS = 1000;

/** Wakes a sleeping wait early; `watching` says whether a watch is open to do so. */
class Alarm {
  watching = false;
  #wake: (() => void) | undefined;
  #rung = false;

  ring(): void {
    this.#rung = true;
    this.#wake?.();
  }

  /** Sleep `ms`, or less if rung meanwhile (also since the last sleep: no change is missed). */
  async sleep(ms: number): Promise<void> {
    if (this.#rung) {
      this.#rung = false;
      return;
    }
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      this.#wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });
    this.#wake = undefined;
    this.#rung = false;
  }
}

function openWatch(wakeOn: WakeOn, alarm: Alarm): () => void {
  let closed = false;
  const query: Record<string, string> = {};
  if (wakeOn.fieldSelector) query.fieldSelector = wakeOn.fieldSelector;
  if (wakeOn.labelSelector) query.labelSelector = wakeOn.labelSelector;
  const controller = wakeOn.clients.watch
    .watch(
      wakeOn.path,
      query,
      () => alarm.ring(),
      () => {
        alarm.watching = false;
      },
    )
    .then((c) => {
      if (!closed) alarm.watching = true;
      return c;
    })
    .catch(() => undefined);
  return () => {
    closed = true;
    alarm.watching = false;
    void controller.then((c) => c?.abort());
  };
}

/**
 * Look until `check` returns a value other than false/undefined. While waiting, an API that throttles or
 * is briefly gone (a single kube-apiserver restarting) is expected and means "look again"; past the bound
 * the last reason (what `check` says it still waits for) goes into the NotReadyYet message.
 */
export async function waitFor<T>(
  what: string,
  check: () => Promise<T | false | undefined>,
  opts: WaitOptions & { readonly wakeOn?: WakeOn },
): Promise<T> {
  const deadline = Date.now() + opts.waitMs;
  let lastTrouble = '';
  const alarm = new Alarm();
  let close: (() => void) | undefined;
  try {
    for (;;) {
      try {
        const value = await check();
        if (value !== false && value !== undefined) return value;
        lastTrouble = '';
      } catch (err) {
        if (!(err instanceof ClusterUnreachableError || err instanceof KubeApiThrottledError)) throw err;
        lastTrouble = ` (last: ${err.message})`;
      }
      const left = deadline - Date.now();
      if (left <= 0) throw new NotReadyYetError(`still waiting for ${what}${lastTrouble}`);
      // Only a wait that did not end at its first look pays for a watch.
      if (opts.wakeOn && !close) close = openWatch(opts.wakeOn, alarm);
      await alarm.sleep(
        Math.min(left, alarm.watching ? Math.max(opts.pollMs, WATCHED_POLL_MS) : opts.pollMs),
      );
    }
  } finally {
    close?.();
  }
}
