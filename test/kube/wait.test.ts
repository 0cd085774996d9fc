/**
 * waitFor's watch is its first look and then only wakes it early: a watch that cannot be opened, or that
 * drops, leaves the poll to find the change; a change the watch reports ends the wait before the poll would. acrossOutages runs
 * its work again after the API server is back, until the invocation's deadline.
 */
import type { Watch } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import {
  AgentFailedError,
  ClusterUnreachableError,
  DeadlineReachedError,
  NotReadyYetError,
} from '../../lib/errors.ts';
import type { KubeClients } from '../../lib/kube/clients.ts';
import { Deadline } from '../../lib/kube/deadline.ts';
import { acrossOutages, latest, waitFor } from '../../lib/kube/wait.ts';

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

  it('takes the watch’s first event (the object as it is) as its first look, reading nothing', async () => {
    let reads = 0;
    const read = async () => {
      reads += 1;
      return { ready: false };
    };
    const watch: WatchFn = async (_path, _query, onEvent) => {
      // As the API server answers a watch without a resourceVersion: the object as it is, at once.
      setTimeout(() => onEvent('ADDED', { ready: true }, {}), 1);
      return new AbortController();
    };
    const ready = await waitFor(
      'ready',
      async (event) => ((await latest(event, read)) as { ready: boolean }).ready,
      {
        waitMs: 60_000,
        pollMs: 30_000,
        deadline: UNBOUNDED,
        wakeOn: { clients: clientsWith(watch), path: '/api/v1/nodes' },
      },
    );
    expect(ready).toBe(true);
    expect(reads).toBe(0);
  });

  it('reads for itself after a poll interval when the watch sends nothing (no such object yet)', async () => {
    let reads = 0;
    const watch: WatchFn = async () => new AbortController();
    await waitFor(
      'the second read',
      async (event) => {
        await latest(event, async () => ++reads);
        return reads >= 2;
      },
      {
        waitMs: 5_000,
        pollMs: 5,
        deadline: UNBOUNDED,
        wakeOn: { clients: clientsWith(watch), path: '/api/v1/nodes' },
      },
    );
    expect(reads).toBe(2);
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

/** An API server that is gone for the first `downFor` looks at its version. */
function serverDownFor(downFor: number): Pick<KubeClients, 'server' | 'version'> & { looks(): number } {
  let looks = 0;
  const refused = Object.assign(new TypeError('fetch failed'), { cause: { code: 'ECONNREFUSED' } });
  return {
    server: 'https://10.0.0.11:6443',
    version: {
      getCode: async () => {
        if (++looks <= downFor) throw refused;
        return { gitVersion: 'v1.26.15' };
      },
    } as unknown as KubeClients['version'],
    looks: () => looks,
  };
}

describe('acrossOutages', () => {
  it('waits for the API server to answer again and runs the work again', async () => {
    const clients = serverDownFor(3);
    let runs = 0;
    const result = await acrossOutages(
      clients,
      async () => {
        if (++runs === 1) throw new ClusterUnreachableError('create Job: the API server did not answer');
        return 'done';
      },
      { waitMs: 10, pollMs: 5, deadline: UNBOUNDED },
    );
    expect(result).toBe('done');
    expect(runs).toBe(2);
    // Past the step's own wait bound (10 ms): the outage may last the invocation's time.
    expect(clients.looks()).toBe(4);
  });

  it('gives up at the invocation’s deadline with DeadlineReached, and lets other failures through', async () => {
    const unreachable = async () => {
      throw new ClusterUnreachableError('read Job: the API server did not answer');
    };
    await expect(
      acrossOutages(serverDownFor(Number.POSITIVE_INFINITY), unreachable, {
        waitMs: 10,
        pollMs: 5,
        deadline: Deadline.in(100),
      }),
    ).rejects.toBeInstanceOf(DeadlineReachedError);
    const clients = serverDownFor(0);
    await expect(
      acrossOutages(
        clients,
        async () => {
          throw new AgentFailedError('agent on node cp-1: no such file');
        },
        { waitMs: 10, pollMs: 5, deadline: UNBOUNDED },
      ),
    ).rejects.toBeInstanceOf(AgentFailedError);
    expect(clients.looks()).toBe(0);
  });
});
