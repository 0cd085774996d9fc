/**
 * Bounded waiting for the cluster. A step waits at most `waitMs` inside an invocation and then answers
 * NotReadyYet, which the state machine retries with backoff: a short wait inside the step costs no state
 * transitions, a long one would hold a Lambda for nothing.
 */
import { ClusterUnreachableError, KubeApiThrottledError, NotReadyYetError } from '../errors.ts';

export interface WaitOptions {
  readonly waitMs: number;
  readonly pollMs: number;
}

/**
 * Look until `check` returns a value other than false/undefined. While waiting, an API that throttles or
 * is briefly gone (a single kube-apiserver restarting) is expected and means "look again"; past the bound
 * the last reason (what `check` says it still waits for) goes into the NotReadyYet message.
 */
export async function waitFor<T>(
  what: string,
  check: () => Promise<T | false | undefined>,
  opts: WaitOptions,
): Promise<T> {
  const deadline = Date.now() + opts.waitMs;
  let lastTrouble = '';
  for (;;) {
    try {
      const value = await check();
      if (value !== false && value !== undefined) return value;
      lastTrouble = '';
    } catch (err) {
      if (!(err instanceof ClusterUnreachableError || err instanceof KubeApiThrottledError)) throw err;
      lastTrouble = ` (last: ${err.message})`;
    }
    if (Date.now() >= deadline) throw new NotReadyYetError(`still waiting for ${what}${lastTrouble}`);
    await new Promise((resolve) => setTimeout(resolve, opts.pollMs));
  }
}
