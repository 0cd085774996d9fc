/**
 * The controllers' work queue: deduplication, re-processing a key added while it is processed, delayed
 * adds, rate limiting per key, and retries after a failed sync.
 */
import { describe, expect, it } from 'vitest';
import { StatusError } from '../../lib/twin/errors.ts';
import { WorkQueue } from '../../lib/twin/workloads/queue.ts';
import { eventually } from './workloads-harness.ts';

describe('WorkQueue', () => {
  it('processes a key added many times once, on a later turn', async () => {
    const seen: string[] = [];
    const q = new WorkQueue('test', (key) => seen.push(key));
    for (let i = 0; i < 5; i++) q.add('a');
    q.add('b');
    expect(seen).toEqual([]);
    await eventually(() => seen.length === 2);
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(seen).toEqual(['a', 'b']);
    q.stop();
  });

  it('processes again a key added while it was being processed', async () => {
    let runs = 0;
    const q = new WorkQueue('test', (key) => {
      runs++;
      if (runs === 1) q.add(key);
    });
    q.add('a');
    await eventually(() => runs === 2);
    q.stop();
  });

  it('adds after a delay, keeping the earliest', async () => {
    const at: number[] = [];
    const start = Date.now();
    const q = new WorkQueue('test', () => at.push(Date.now() - start));
    q.addAfter('a', 200);
    q.addAfter('a', 20);
    await eventually(() => at.length === 1);
    await new Promise((resolve) => setTimeout(resolve, 250));
    expect(at).toHaveLength(1);
    q.stop();
  });

  it('coalesces a burst into one sync per minimum interval', async () => {
    let runs = 0;
    const q = new WorkQueue('test', () => runs++, { minIntervalMs: 200 });
    q.add('a');
    await eventually(() => runs === 1);
    q.add('a');
    await new Promise((resolve) => setImmediate(resolve));
    q.add('a');
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(runs).toBe(1);
    await eventually(() => runs === 2);
    q.stop();
  });

  it('retries a key whose sync failed, until it succeeds', async () => {
    let attempts = 0;
    const q = new WorkQueue('test', () => {
      attempts++;
      if (attempts < 3) throw new StatusError('Conflict', 'the object has been modified');
    });
    q.add('a');
    await eventually(() => attempts === 3);
    q.stop();
  });

  it('does nothing once stopped', async () => {
    let runs = 0;
    const q = new WorkQueue('test', () => runs++);
    q.add('a');
    q.addAfter('b', 5);
    q.stop();
    q.add('c');
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(runs).toBe(0);
  });
});
