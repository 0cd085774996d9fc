/**
 * OpenStack whose cloud.conf names a credentials Secret ([Global] secret-name) that is not there: the CCM
 * would not start, and the run would roll back after changing the cluster, so preflight refuses before
 * any change, naming the Secret. The orchestrator learns whether the Secret exists from its metadata only:
 * it never receives the credentials, in this run or in a successful one.
 */
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { AGENT_CONFIGMAP } from '../../lib/kube/agent-job.ts';
import type { StoreEvent } from '../../lib/twin/store.ts';
import { fixtureSpec } from '../twin/running-twin.ts';
import { type E2E, nodeFiles, startE2E } from './harness.ts';

const SECRET_MINI = fileURLToPath(new URL('../fixtures/twins/openstack-secret-mini.yaml', import.meta.url));
const SECRET = { name: 'openstack-credentials', namespace: 'kube-system' };

let e2e: E2E | undefined;
afterEach(async () => {
  vi.restoreAllMocks();
  await e2e?.stop();
  e2e = undefined;
});

/**
 * What the twin stores from now on, leaving out the agent's own machinery (its bundle ConfigMap, Jobs
 * and Pods) and what nodes and controllers write anyway (heartbeats, Events); objects created and deleted
 * again meanwhile count as no change.
 */
function clusterChanges(e: E2E): () => string[] {
  const machinery = new Set(['jobs.batch', 'pods', 'leases.coordination.k8s.io', 'events']);
  const seen: StoreEvent[] = [];
  e.t.twin.store.subscribe((ev) => seen.push(ev));
  const id = (ev: StoreEvent) => `${ev.key} ${ev.object.metadata.namespace ?? ''}/${ev.object.metadata.name}`;
  return () => {
    const kept = seen.filter(
      (ev: StoreEvent) =>
        !machinery.has(ev.key) &&
        !(ev.key === 'nodes' && ev.type === 'MODIFIED') &&
        !(ev.key === 'configmaps' && ev.object.metadata.name === AGENT_CONFIGMAP),
    );
    // An object created and deleted again meanwhile (the agents' account, while preflight's inspections
    // ran) is no change to the cluster.
    const gone = new Set(
      kept
        .filter((ev) => ev.type === 'DELETED')
        .map(id)
        .filter((o) => kept.find((ev) => id(ev) === o)?.type === 'ADDED'),
    );
    return kept.filter((ev) => !gone.has(id(ev))).map((ev) => `${ev.type} ${id(ev)}`);
  };
}

/**
 * Every Secret read of the orchestrator through its clients, with what it received: the reads that can
 * carry a Secret's data are spied on, and the single-object read is let through.
 */
function spyOnSecretReads(e: E2E) {
  const { core, objects } = e.t;
  const received: unknown[] = [];
  const read = core.readNamespacedSecret.bind(core);
  const single = vi.spyOn(core, 'readNamespacedSecret').mockImplementation(async (...args) => {
    const answer = await read(...args);
    received.push(JSON.parse(JSON.stringify(answer)));
    return answer;
  });
  const lists = [vi.spyOn(core, 'listNamespacedSecret'), vi.spyOn(core, 'listSecretForAllNamespaces')];
  const generic = vi.spyOn(objects, 'read');
  const secretsByKind = () =>
    generic.mock.calls.filter(([spec]) => spec.kind === 'Secret').length +
    lists.reduce((n, s) => n + s.mock.calls.length, 0);
  return { single, received, secretsByKind };
}

describe('OpenStack with [Global] secret-name naming a Secret that is not there', () => {
  it('refuses in preflight, naming the Secret, with every node file and object as it was', async () => {
    e2e = await startE2E(await fixtureSpec(SECRET_MINI));
    const { t } = e2e;
    await t.core.deleteNamespacedSecret(SECRET);
    const start = await nodeFiles(t);
    const changes = clusterChanges(e2e);
    const reads = spyOnSecretReads(e2e);

    const up = await e2e.upgrade();
    expect(up.status).not.toBe('SUCCEEDED');
    expect(up.error?.name).toBe('PreflightFailed');
    expect(up.error?.cause).toBe(
      'OpenStack credentials Secret kube-system/openstack-credentials named by [Global] secret-name in ' +
        '/etc/kubernetes/cloud.conf on cp-1 does not exist: create it (or drop secret-name) and run again',
    );
    expect(await nodeFiles(t)).toEqual(start);
    expect(changes()).toEqual([]);
    // Asked once, as one object's metadata (the twin answered 404).
    expect(reads.single).toHaveBeenCalledTimes(1);
    expect(reads.secretsByKind()).toBe(0);
  });

  it('reads the Secret as metadata only when it is there: the upgrade never receives its data', async () => {
    e2e = await startE2E(await fixtureSpec(SECRET_MINI));
    const reads = spyOnSecretReads(e2e);

    const up = await e2e.upgrade();
    expect(up.error).toBeUndefined();
    expect(up.status).toBe('SUCCEEDED');
    expect(reads.received.length).toBeGreaterThan(0);
    for (const answer of reads.received) {
      // The twin answers PartialObjectMetadata only to a request whose Accept asked for it.
      expect(answer).toMatchObject({ kind: 'PartialObjectMetadata', metadata: SECRET });
      expect(answer).not.toHaveProperty('data');
      expect(answer).not.toHaveProperty('stringData');
    }
    expect(reads.secretsByKind()).toBe(0);
  });
});
