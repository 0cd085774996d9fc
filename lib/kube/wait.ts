/**
 * Bounded waiting for the cluster. A step waits at most `waitMs` inside an invocation and then answers
 * NotReadyYet, which the state machine retries with backoff: a short wait inside the step costs no state
 * transitions, a long one would hold a Lambda for nothing. Every wait also draws on the invocation's
 * `deadline` (deadline.ts): a wait it cuts ends with DeadlineReached, before Lambda's timeout.
 *
 * A wait can name what it waits on (`wakeOn`): a watch on it, opened first, delivers the object as it is
 * (its first look) and then wakes the wait at each change, so the change is seen in milliseconds rather
 * than at the next poll, and the poll slows to a fallback. The check gets the latest event the watch
 * delivered, so it can judge the object it carries without reading it: a wait costs one watch, not a read
 * and then a watch. A watch that fails or ends changes nothing but the latency and the reads.
 */
import { ClusterUnreachableError, KubeApiThrottledError } from '../errors.ts';
import type { KubeClients } from './clients.ts';
import type { Deadline } from './deadline.ts';
import { call } from './errors.ts';

export interface WaitOptions {
  readonly waitMs: number;
  readonly pollMs: number;
  /** The invocation's deadline, which every wait of the step shares. */
  readonly deadline: Deadline;
}

/** The objects whose changes may end a wait: a collection path and a field selector, as for a list. */
export interface WakeOn {
  readonly clients: Pick<KubeClients, 'watch'>;
  /** e.g. `/api/v1/nodes`, `/apis/batch/v1/namespaces/kube-system/jobs`. */
  readonly path: string;
  readonly fieldSelector?: string;
}

/** A watch event: ADDED, MODIFIED or DELETED, and the object as the API server sent it (plain JSON). */
export interface WatchEvent {
  readonly type: string;
  readonly object: unknown;
}

/** Changes of the one object named `name` in the collection at `path`. */
export function wakeOnObject(clients: Pick<KubeClients, 'watch'>, path: string, name: string): WakeOn {
  return { clients, path, fieldSelector: `metadata.name=${name}` };
}

/** While a watch is open, polling is only the fallback for a watch that misses or drops an event. */
const WATCHED_POLL_MS = 1000;

/** Wakes a sleeping wait early with the latest event; `watching` says whether a watch is open to do so. */
class Alarm {
  watching = false;
  #wake: (() => void) | undefined;
  #latest: WatchEvent | undefined;

  ring(event: WatchEvent): void {
    this.#latest = event;
    this.#wake?.();
  }

  /**
   * Sleep `ms`, or less if an event comes (also one that came since the last sleep: none is missed), and
   * answer that event; undefined when the time ran out, and the check must look for itself.
   */
  async sleep(ms: number): Promise<WatchEvent | undefined> {
    if (!this.#latest) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, ms);
        this.#wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.#wake = undefined;
    }
    const event = this.#latest;
    this.#latest = undefined;
    return event;
  }
}

function openWatch(wakeOn: WakeOn, alarm: Alarm): () => void {
  let closed = false;
  const query: Record<string, string> = {};
  if (wakeOn.fieldSelector) query.fieldSelector = wakeOn.fieldSelector;
  const controller = wakeOn.clients.watch
    .watch(
      wakeOn.path,
      query,
      (type, object) => {
        if (type === 'ADDED' || type === 'MODIFIED' || type === 'DELETED') alarm.ring({ type, object });
      },
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
 * Look until `check` returns a value other than false/undefined. `check` gets the watch's latest event
 * when one woke the wait, and nothing when it must read for itself. While waiting, an API that throttles
 * or is briefly gone (a single kube-apiserver restarting) is expected and means "look again"; past the
 * bound the last reason (what `check` says it still waits for) goes into the NotReadyYet message.
 */
export function waitFor<T>(
  what: string,
  check: (event?: WatchEvent) => Promise<T | false | undefined>,
  opts: WaitOptions & { readonly wakeOn?: WakeOn },
): Promise<T> {
  return opts.deadline.within(opts.waitMs, (bound) => lookUntil(what, check, { ...opts, deadline: bound }));
}

async function lookUntil<T>(
  what: string,
  check: (event?: WatchEvent) => Promise<T | false | undefined>,
  opts: WaitOptions & { readonly wakeOn?: WakeOn },
): Promise<T> {
  const { deadline } = opts;
  let lastTrouble = '';
  const alarm = new Alarm();
  let close: (() => void) | undefined;
  let event: WatchEvent | undefined;
  try {
    if (opts.wakeOn) {
      // A watch without a resourceVersion first sends the object as it is now (an ADDED event): that is the
      // first look, instead of a read of its own. An object that does not exist sends nothing: after a poll
      // interval the check reads for itself.
      close = openWatch(opts.wakeOn, alarm);
      event = await alarm.sleep(Math.min(opts.pollMs, Math.max(0, deadline.remainingMs())));
    }
    for (;;) {
      try {
        const value = await check(event);
        if (value !== false && value !== undefined) return value;
        lastTrouble = '';
      } catch (err) {
        if (!(err instanceof ClusterUnreachableError || err instanceof KubeApiThrottledError)) throw err;
        lastTrouble = ` (last: ${err.message})`;
      }
      const left = deadline.remainingMs();
      if (left <= 0) throw deadline.reached(`still waiting for ${what}${lastTrouble}`);
      event = await alarm.sleep(
        Math.min(left, alarm.watching ? Math.max(opts.pollMs, WATCHED_POLL_MS) : opts.pollMs),
      );
    }
  } finally {
    close?.();
  }
}

/** The object as the watch's `event` last showed it (undefined: deleted), or as `read` finds it now. */
export async function latest<O>(
  event: WatchEvent | undefined,
  read: () => Promise<O | undefined>,
): Promise<O | undefined> {
  if (!event) return read();
  return event.type === 'DELETED' ? undefined : (event.object as O);
}

/**
 * Run `work` through outages of the API endpoint itself: when it fails unreachable (the one kube-apiserver
 * these clients reach is restarting, as `work` itself may have caused), wait for the server to answer again
 * and run `work` again, for as long as the invocation's deadline allows (then DeadlineReached: the step
 * resumes in a new invocation). `work` must be idempotent.
 */
export async function acrossOutages<T>(
  clients: Pick<KubeClients, 'server' | 'version'>,
  work: () => Promise<T>,
  opts: WaitOptions,
): Promise<T> {
  for (;;) {
    try {
      return await work();
    } catch (err) {
      if (!(err instanceof ClusterUnreachableError)) throw err;
      await waitFor(
        `the API server at ${clients.server} to answer again`,
        async () => {
          await call(`reach the API server at ${clients.server}`, () => clients.version.getCode());
          return true;
        },
        { ...opts, waitMs: opts.deadline.remainingMs() },
      );
    }
  }
}
