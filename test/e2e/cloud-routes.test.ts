/**
 * Routes and node CIDRs carried over: the CCM takes over what kube-controller-manager's flags say it did
 * (cloud routes for node podCIDRs, GCE's CloudAllocator node IPAM), so that a node that joins after the
 * move still gets a podCIDR and, on a route-based (kubenet) cluster, a route in the twin's cloud; a cluster
 * without routes gets none.
 */
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { TwinSpec } from '../../lib/twin/spec.ts';
import { type ApiServerUnderTest, apiServersUnderTest } from '../real-api.ts';
import { eventually, FIXTURES, fixtureSpec, KCM, KUBELET_FLAGS } from '../twin/running-twin.ts';
import { type E2E, startE2E } from './harness.ts';

const GCP_MINI = fileURLToPath(new URL('../fixtures/twins/gcp-mini.yaml', import.meta.url));

let e2e: E2E | undefined;
afterEach(async () => {
  await e2e?.stop();
  e2e = undefined;
});

let server: ApiServerUnderTest | undefined;

async function start(spec: TwinSpec): Promise<E2E> {
  e2e = await startE2E(spec, server);
  return e2e;
}

/** A worker joining after the move: its launch template's kubelet runs --cloud-provider=external. */
async function joinExternalWorker(e: E2E): Promise<string> {
  const text = e.t.twin.spec.nodeGroups.find((g) => g.name === 'worker')?.files[KUBELET_FLAGS] ?? '';
  const external = text
    .replace(/--cloud-provider=\w+/, '--cloud-provider=external')
    .replace(/--cloud-config=\S+ ?/, '');
  return e.t.twin.nodes.join('worker', { files: { [KUBELET_FLAGS]: external } });
}

async function podCidr(e: E2E, node: string): Promise<string | undefined> {
  return (await e.t.core.readNode({ name: node })).spec?.podCIDR;
}

/** The cloud's route for a node, once its podCIDR has one to its instance. */
async function routeOf(e: E2E, node: string): Promise<string | undefined> {
  const cidr = await podCidr(e, node);
  return e.t.twin.cloud.routes().find((r) => r.node === node && r.destinationCidr === cidr)?.destinationCidr;
}

async function everyNodeRouted(e: E2E): Promise<boolean> {
  const nodes = (await e.t.core.listNode()).items.map((n) => n.metadata?.name ?? '');
  return (await Promise.all(nodes.map((n) => routeOf(e, n)))).every((r) => r !== undefined);
}

/** Intervals with two node IPAMs handing out ranges against each other, finished or still open. */
function twoNodeIpams(e: E2E): number {
  const finished = e.t.twin.monitor.violations().filter((v) => v.kind === 'two-node-ipams').length;
  return finished + (e.t.twin.controllers.nodeIpams().length > 1 ? 1 : 0);
}

/**
 * An IP-alias GCE cluster: KCM allocates node CIDRs from the cloud's alias ranges (CloudAllocator), no
 * routes; `controlPlane` control-plane nodes.
 */
async function ipAliasGce(controlPlane = 1): Promise<TwinSpec> {
  const spec = await fixtureSpec(GCP_MINI, {
    edits: [
      {
        group: 'cp',
        file: KCM,
        edit: (t) =>
          t
            .replace('- --allocate-node-cidrs=false', '- --allocate-node-cidrs=true')
            .replace(
              /^( *)- --cloud-config=/m,
              '$1- --cidr-allocator-type=CloudAllocator\n$1- --cloud-config=',
            )
            .replace(/^( *)- --controllers=/m, '$1- --configure-cloud-routes=false\n$1- --controllers='),
      },
    ],
  });
  return {
    ...spec,
    nodeGroups: spec.nodeGroups.map((g) => (g.name === 'cp' ? { ...g, count: controlPlane } : g)),
  };
}

async function ccmArgs(e: E2E, deployment: string): Promise<string[]> {
  const d = await e.t.apps.readNamespacedDeployment({ name: deployment, namespace: 'kube-system' });
  return d.spec?.template.spec?.containers.find((c) => c.name === 'cloud-controller-manager')?.args ?? [];
}

describe.each(apiServersUnderTest())('routes and node CIDRs carried over to the CCM, on the $name', (on) => {
  beforeEach(() => {
    server = on;
  });

  it('gives a node that joins after the move a route, on a cluster whose KCM programmed cloud routes', async () => {
    // kubenet on AWS: KCM allocates node CIDRs and programs routes (configure-cloud-routes defaults to true).
    const spec = await fixtureSpec(FIXTURES.awsMini, {
      edits: [
        { group: 'cp', file: KCM, edit: (t) => t.replace(/^ *- --configure-cloud-routes=false\n/m, '') },
      ],
    });
    const e = await start(spec);
    await eventually(() => everyNodeRouted(e), { what: 'the in-tree route controller to route every node' });

    const up = await e.upgrade();
    expect(up.error).toBeUndefined();
    expect(up.status).toBe('SUCCEEDED');
    expect(await ccmArgs(e, 'aws-cloud-controller-manager')).toEqual(
      expect.arrayContaining(['--configure-cloud-routes=true', '--cluster-cidr=192.168.0.0/16']),
    );
    // The range allocator stays in KCM, which keeps the flags it needs for it.
    const kcm = await e.t.readFile('cp-1', KCM);
    expect(kcm).toContain('- --allocate-node-cidrs=true');
    expect(kcm).toContain('- --cluster-cidr=192.168.0.0/16');

    const joined = await joinExternalWorker(e);
    const route = await eventually(() => routeOf(e, joined), { what: `a route for ${joined}` });
    expect(route).toMatch(/^192\.168\.\d+\.0\/24$/);
    expect(await everyNodeRouted(e)).toBe(true);
    expect(twoNodeIpams(e)).toBe(0);
  });

  it('keeps routes off on a cluster whose KCM programmed none: the CCM says so, and the cloud gets none', async () => {
    const e = await start(await fixtureSpec(FIXTURES.awsMini));
    const up = await e.upgrade();
    expect(up.status).toBe('SUCCEEDED');
    const args = await ccmArgs(e, 'aws-cloud-controller-manager');
    expect(args).toContain('--configure-cloud-routes=false');
    expect(args.some((a) => a.startsWith('--cluster-cidr'))).toBe(false);

    const joined = await joinExternalWorker(e);
    // KCM still allocates its podCIDR; nothing routes it.
    await eventually(() => podCidr(e, joined), { what: `a podCIDR for ${joined}` });
    await eventually(async () => !(await e.t.core.readNode({ name: joined })).spec?.taints?.length, {
      what: `${joined} initialised by the CCM`,
    });
    expect(e.t.twin.cloud.routes()).toEqual([]);
  });

  it('hands GCE’s CloudAllocator node IPAM to the CCM, and the way back gives it to KCM again', async () => {
    const e = await start(await ipAliasGce());
    const original = await e.t.readFile('cp-1', KCM);
    await eventually(() => podCidr(e, 'worker-1'), { what: 'the in-tree CloudAllocator to allocate' });

    const up = await e.upgrade();
    expect(up.error).toBeUndefined();
    expect(up.status).toBe('SUCCEEDED');
    expect(await ccmArgs(e, 'cloud-controller-manager')).toEqual(
      expect.arrayContaining([
        '--allocate-node-cidrs=true',
        '--cidr-allocator-type=CloudAllocator',
        '--cluster-cidr=192.168.0.0/16',
        '--configure-cloud-routes=false',
        '--controllers=*',
      ]),
    );
    // KCM cannot run the CloudAllocator without an in-tree cloud: it stops allocating.
    expect(await e.t.readFile('cp-1', KCM)).toContain('- --allocate-node-cidrs=false');

    const joined = await joinExternalWorker(e);
    expect(await eventually(() => podCidr(e, joined), { what: `a podCIDR for ${joined}` })).toMatch(
      /^192\.168\.\d+\.0\/24$/,
    );
    expect(e.t.twin.cloud.routes()).toEqual([]);
    expect(twoNodeIpams(e)).toBe(0);

    const down = await e.downgrade();
    expect(down.error).toBeUndefined();
    expect(down.status).toBe('SUCCEEDED');
    expect(await e.t.readFile('cp-1', KCM)).toBe(original);
  });

  it('hands an HA control plane’s CloudAllocator over without leader migration: never two node IPAMs', async () => {
    // The migration lease hands over only route, service and cloud-node-lifecycle: a CCM started beside
    // in-tree kube-controller-managers would allocate with them.
    const e = await start(await ipAliasGce(3));
    await eventually(() => podCidr(e, 'worker-1'), { what: 'the in-tree CloudAllocator to allocate' });
    const up = await e.upgrade();
    expect(up.error).toBeUndefined();
    expect(up.status).toBe('SUCCEEDED');
    expect(twoNodeIpams(e)).toBe(0);
    const joined = await joinExternalWorker(e);
    await eventually(() => podCidr(e, joined), { what: `a podCIDR for ${joined}` });
    expect(twoNodeIpams(e)).toBe(0);
  });
});
