/**
 * waitFor's watch only wakes it early: a watch that cannot be opened, or that drops, leaves the poll to
 * find the change; a change the watch reports ends the wait before the poll would.
 */
import type { Watch } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { DeadlineReachedError, NotReadyYetError } from '../../lib/errors.ts';
import { Deadline } from '../../lib/kube/deadline.ts';
import { waitFor } from '../../lib/kube/wait.ts';

const UNBOUNDED = Deadline.in(Number.POSITIVE_INFINITY);

type WatchFn = Watch['watch'];

function clientsWith(watch: WatchFn): { watch: Watch } {
  return { watch: { watch } as Watch };
}

describe('waitFor', () => {
  it('wakes on a watch event long before its next poll', async () => {
    let ready = false;
    const watch: WatchFn = async (_path, _query, onEvent) => {
      setTimeout(() => {
        ready = true;
        onEvent('MODIFIED', {}, {});
      }, 20);
      return new AbortController();
    };
    const started = Date.now();
    await waitFor('ready', async () => ready, {
      waitMs: 60_000,
      pollMs: 30_000,
      deadline: UNBOUNDED,
      wakeOn: { clients: clientsWith(watch), path: '/api/v1/nodes' },
    });
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it('falls back to polling when the watch cannot be opened', async () => {
    let looks = 0;
    const watch: WatchFn = async () => {
      throw new Error('watch refused');
    };
    await waitFor('the third look', async () => ++looks >= 3, {
      waitMs: 5_000,
      pollMs: 5,
      deadline: UNBOUNDED,
      wakeOn: { clients: clientsWith(watch), path: '/api/v1/nodes' },
    });
    expect(looks).toBe(3);
  });

  it('closes its watch when done, and still ends at its bound with NotReadyYet', async () => {
    const aborted: boolean[] = [];
    const watch: WatchFn = async () => {
      const controller = new AbortController();
      controller.signal.addEventListener('abort', () => aborted.push(true));
      return controller;
    };
    await expect(
      waitFor('never', async () => false, {
        waitMs: 50,
        pollMs: 5,
        deadline: UNBOUNDED,
        wakeOn: { clients: clientsWith(watch), path: '/api/v1/nodes' },
      }),
    ).rejects.toBeInstanceOf(NotReadyYetError);
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(aborted).toEqual([true]);
  });

  it("shares the invocation's deadline between sequential waits: the one it cuts ends with DeadlineReached", async () => {
    const deadline = Deadline.in(150);
    const opts = { waitMs: 100, pollMs: 5, deadline };
    await expect(waitFor('never', async () => false, opts)).rejects.toBeInstanceOf(NotReadyYetError);
    await expect(waitFor('never again', async () => false, opts)).rejects.toBeInstanceOf(
      DeadlineReachedError,
    );
  });
});
