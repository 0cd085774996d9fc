/**
 * Writes that carry the version they read (a replace with its resourceVersion, a JSON patch guarded by a
 * `test` of it) meet a conflict when someone else wrote the object meanwhile: kube-controller-manager
 * updating a node, an operator editing kubeadm-config. The write is recomputed on the object as it is now,
 * as client-go's retry.RetryOnConflict does; only a conflict that persists fails the step.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Deadline } from './deadline.ts';
import { httpStatus } from './errors.ts';

/** Attempts in all, and the pause before the next (jittered), as retry.DefaultRetry's 5 × 10 ms. */
const ATTEMPTS = 5;
const PAUSE_MS = 10;

/** A 409, or the 422 of a guarded JSON patch whose `test` no longer holds. */
export function isConflict(err: unknown, guardedPatch = false): boolean {
  const status = httpStatus(err);
  return status === 409 || (guardedPatch && status === 422);
}

/**
 * Run `attempt` (which reads what it writes anew each time) until it does not meet a conflict, at most
 * ATTEMPTS times; the last conflict is thrown as it came. A pause the invocation's `deadline` has no time
 * left for ends the step with DeadlineReached instead: the next invocation makes the write again.
 */
export async function retryOnConflict<T>(
  attempt: () => Promise<T>,
  opts: { readonly deadline: Deadline; readonly guardedPatch?: boolean },
): Promise<T> {
  for (let n = 1; ; n++) {
    try {
      return await attempt();
    } catch (err) {
      if (n >= ATTEMPTS || !isConflict(err, opts.guardedPatch)) throw err;
      const pause = PAUSE_MS * (1 + Math.random()) * n;
      if (opts.deadline.remainingMs() <= pause) throw opts.deadline.reached((err as Error).message);
      await sleep(pause);
    }
  }
}
