/** A read that finds nothing is undefined; every other failure still fails the caller. */
import { ApiException } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { KubeApiRejectedError, KubeApiThrottledError } from '../../lib/errors.ts';
import { call, orNotFound } from '../../lib/kube/errors.ts';

const answer = (code: number) => new ApiException(code, `HTTP ${code}`, '{"message":"nope"}', {});

describe('orNotFound', () => {
  it('gives the answer of a read that succeeds', async () => {
    await expect(orNotFound(Promise.resolve({ kind: 'Pod' }))).resolves.toEqual({ kind: 'Pod' });
  });

  it('turns a 404, raw or as call() names it, into undefined', async () => {
    await expect(orNotFound(Promise.reject(answer(404)))).resolves.toBeUndefined();
    await expect(orNotFound(call('read pod x', () => Promise.reject(answer(404))))).resolves.toBeUndefined();
  });

  it('throws any other failure as it came', async () => {
    await expect(orNotFound(call('read pod x', () => Promise.reject(answer(403))))).rejects.toThrow(
      KubeApiRejectedError,
    );
    await expect(orNotFound(call('read pod x', () => Promise.reject(answer(503))))).rejects.toThrow(
      KubeApiThrottledError,
    );
    const plain = new Error('not an API answer');
    await expect(orNotFound(Promise.reject(plain))).rejects.toBe(plain);
  });
});
