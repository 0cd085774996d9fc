/**
 * assets/rbac/ccm-migrate.yaml against what ccm-migrate really asks of a cluster: every kind of run (plan,
 * upgrade, downgrade, drift checks both ways, the CCM as a DaemonSet under leader migration, an install of a
 * provider never in-tree) on every provider's twin, each API request recorded by the twin in RBAC's terms.
 * Every request must be allowed by the rules, and every rule must be used by some request: the grant is
 * exactly the calls. RBAC's evaluation is written out here (apiGroups × resources × verbs, a Role only in its
 * namespace); the in-process twin does not enforce it. The last block runs the same on a real kube-apiserver,
 * whose authorizer does.
 */
import { writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { checkDrift } from '../../lib/drift/check.ts';
import { clientsFromKubeconfigFile, type KubeClients } from '../../lib/kube/clients.ts';
import { localContext } from '../../lib/local/context.ts';
import { planUpgrade } from '../../lib/local/plan.ts';
import type { ResourceAccess } from '../../lib/twin/api/front-door.ts';
import { renderKubeconfig } from '../../lib/twin/kubeconfig.ts';
import { loadTwinSpec } from '../../lib/twin/spec.ts';
import { realApiRuns } from '../real-api.ts';
import { type E2E, startE2E } from './harness.ts';

interface Rule {
  readonly apiGroups: string[];
  readonly resources: string[];
  readonly verbs: string[];
}
interface RbacRole {
  readonly kind: 'ClusterRole' | 'Role';
  readonly metadata: { readonly namespace?: string };
  readonly rules: Rule[];
}

const MANIFEST = fileURLToPath(new URL('../../assets/rbac/ccm-migrate.yaml', import.meta.url));
/** Verbs the authorizer checks when a client grants permissions (privilege escalation), never requests. */
const AUTHORIZER_ONLY_VERBS = new Set(['escalate', 'bind']);

async function roles(): Promise<RbacRole[]> {
  const docs = parseAllDocuments(await readFile(MANIFEST, 'utf8')).map((d) => d.toJS() as RbacRole);
  return docs.filter((d) => d.kind === 'ClusterRole' || d.kind === 'Role');
}

const ruleAllows = (rule: Rule, a: ResourceAccess): boolean =>
  rule.apiGroups.includes(a.group) && rule.resources.includes(a.resource) && rule.verbs.includes(a.verb);

/** A ClusterRole (bound cluster-wide) allows in every namespace; a Role only in its own. */
function allowedBy(all: readonly RbacRole[], a: ResourceAccess): boolean {
  return all.some(
    (role) =>
      (role.kind === 'ClusterRole' ||
        (a.namespace !== undefined && a.namespace === role.metadata.namespace)) &&
      role.rules.some((rule) => ruleAllows(rule, a)),
  );
}

const fixture = (name: string) => fileURLToPath(new URL(`../fixtures/twins/${name}.yaml`, import.meta.url));
const describeAccess = (a: ResourceAccess) =>
  `${a.verb} ${a.group || 'core'}/${a.resource}${a.namespace ? ` in ${a.namespace}` : ''}`;

/** Every request of every scenario below, gathered for the "every rule used" check at the end. */
const seen = new Map<string, ResourceAccess>();

/** Run `scenario` on a fresh twin of `name` and record the requests it made (not the harness's own). */
async function requestsOf(name: string, scenario: (e: E2E) => Promise<void>): Promise<ResourceAccess[]> {
  const e = await startE2E(await loadTwinSpec(fixture(name)));
  try {
    const key = (a: ResourceAccess) => JSON.stringify([a.verb, a.group, a.resource, a.namespace]);
    const before = new Map(e.t.twin.api.stats().accesses.map((a) => [key(a), a.count]));
    await scenario(e);
    const made = e.t.twin.api
      .stats()
      .accesses.filter((a) => a.count > (before.get(key(a)) ?? 0))
      .map(({ count: _count, ...access }) => access);
    for (const a of made) seen.set(key(a), a);
    return made;
  } finally {
    await e.stop();
  }
}

const drift = (e: E2E, provider: string, expect: 'external' | 'in-tree') =>
  checkDrift(localContext({ clients: e.t, pollMs: 10 }), {
    clusterId: 'rbac',
    provider,
    expect,
    deep: true,
    stuckAfterMs: 0,
  });

async function bothWays(e: E2E, provider: string): Promise<void> {
  await planUpgrade({ clients: e.t, options: {}, pollMs: 10 });
  expect((await e.upgrade()).status).toBe('SUCCEEDED');
  await drift(e, provider, 'external');
  expect((await e.downgrade()).status).toBe('SUCCEEDED');
  await drift(e, provider, 'in-tree');
}

describe('the RBAC ccm-migrate ships', () => {
  let all: RbacRole[] = [];

  it.each([
    ['aws-mini', 'aws'],
    ['gcp-mini', 'gcp'],
    ['openstack-secret-mini', 'openstack'],
    ['vsphere-mini', 'vsphere'],
    ['azure-mini', 'azure'],
  ])(
    'allows every request of plan, upgrade, drift and downgrade on %s',
    async (name, provider) => {
      all = await roles();
      const made = await requestsOf(name, (e) => bothWays(e, provider));
      expect(made.length).toBeGreaterThan(10);
      expect(made.filter((a) => !allowedBy(all, a)).map(describeAccess)).toEqual([]);
    },
    60_000,
  );

  it('allows every request of a DaemonSet CCM under leader migration, both ways', async () => {
    all = await roles();
    const made = await requestsOf('aws-ha-mini', async (e) => {
      expect((await e.upgrade({ options: { ccmWorkload: 'daemonset' } })).status).toBe('SUCCEEDED');
      expect((await e.downgrade()).status).toBe('SUCCEEDED');
    });
    expect(made.filter((a) => !allowedBy(all, a)).map(describeAccess)).toEqual([]);
  }, 120_000);

  it('allows every request of an install of a provider never in-tree (IBM)', async () => {
    all = await roles();
    const made = await requestsOf('ibm-mini', async (e) => {
      expect((await e.upgrade({ options: { provider: 'ibm' } })).status).toBe('SUCCEEDED');
    });
    expect(made.filter((a) => !allowedBy(all, a)).map(describeAccess)).toEqual([]);
  }, 60_000);

  it('would refuse what ccm-migrate never asks (so the checks above can fail)', async () => {
    all = await roles();
    const secretsElsewhere = { verb: 'get', group: '', resource: 'secrets', namespace: 'default' } as const;
    const listSecrets = { verb: 'list', group: '', resource: 'secrets', namespace: 'kube-system' } as const;
    const podsCluster = { verb: 'list', group: '', resource: 'pods', namespace: undefined } as const;
    expect([secretsElsewhere, listSecrets, podsCluster].filter((a) => allowedBy(all, a))).toEqual([]);
  });

  // Last in the file (its tests run in order): every scenario above has run.
  it("grants nothing the runs above did not ask for (each rule's every verb on every resource used)", () => {
    const unused: string[] = [];
    for (const role of all) {
      for (const rule of role.rules) {
        for (const group of rule.apiGroups) {
          for (const resource of rule.resources) {
            for (const verb of rule.verbs) {
              if (AUTHORIZER_ONLY_VERBS.has(verb)) continue;
              const used = [...seen.values()].some(
                (a) =>
                  a.group === group &&
                  a.resource === resource &&
                  a.verb === verb &&
                  (role.kind === 'ClusterRole' || a.namespace === role.metadata.namespace),
              );
              if (!used) unused.push(`${role.kind} ${verb} ${group || 'core'}/${resource}`);
            }
          }
        }
      }
    }
    expect(seen.size).toBeGreaterThan(20);
    expect(unused).toEqual([]);
  });
});

/**
 * The same rules enforced by a real kube-apiserver's authorizer: ccm-migrate runs as a client certificate
 * in group ccm-migrate, bound only by assets/rbac/ccm-migrate.yaml (applied by the admin), so a missing rule
 * is a real 403; the CCM's RBAC it installs is a real privilege-escalation check (escalate, bind).
 */
describe.runIf(realApiRuns())('the RBAC ccm-migrate ships, on a real kube-apiserver', () => {
  let e: E2E | undefined;
  afterEach(async () => {
    await e?.stop();
    e = undefined;
  });

  /** A twin on the real server with the manifest's objects (edited by `edit`) applied by its admin. */
  async function startBound(name: string, edit: (docs: RbacRole[]) => RbacRole[] = (d) => d) {
    e = await startE2E(await loadTwinSpec(fixture(name)), { realApi: true });
    const docs = parseAllDocuments(await readFile(MANIFEST, 'utf8')).map((d) => d.toJS() as RbacRole);
    for (const doc of edit(docs)) await e.t.objects.create(doc as never);
    return { e, clients: identity(e, 'ccm-migrate-operator', ['ccm-migrate']) };
  }

  /** Clients for a user of the cluster CA with these groups, through the twin's address. */
  function identity(run: E2E, user: string, groups: string[]): KubeClients {
    const pki = run.t.twin.realApi?.pki;
    if (!pki) throw new Error('not a real-API twin');
    const file = path.join(run.t.twin.stateDir, `kubeconfig-${user}`);
    const tls = pki.clientCert(user, groups);
    writeFileSync(file, renderKubeconfig({ name: user, server: run.t.twin.url, tls }), { mode: 0o600 });
    return clientsFromKubeconfigFile(file);
  }

  it('lets plan, upgrade, drift and downgrade run on the AWS twin', async () => {
    const { e: run, clients } = await startBound('aws-mini');
    const asUser = { clients, store: run.store };
    await planUpgrade({ clients, options: {}, pollMs: 10 });
    const up = await run.upgrade(asUser);
    expect(up.error).toBeUndefined();
    const check = (mode: 'external' | 'in-tree') =>
      checkDrift(localContext({ clients, pollMs: 10 }), {
        clusterId: 'rbac',
        provider: 'aws',
        expect: mode,
        deep: true,
        stuckAfterMs: 0,
      });
    expect((await check('external')).status).toBe('clean');
    const down = await run.downgrade(asUser);
    expect(down.error).toBeUndefined();
    expect((await check('in-tree')).status).toBe('clean');
  }, 120_000);

  it('lets a DaemonSet CCM under leader migration go both ways on the HA twin', async () => {
    const { e: run, clients } = await startBound('aws-ha-mini');
    const up = await run.upgrade({ clients, options: { ccmWorkload: 'daemonset' } });
    expect(up.error).toBeUndefined();
    const down = await run.downgrade({ clients });
    expect(down.error).toBeUndefined();
  }, 120_000);

  it('refuses an identity the manifest does not bind, before any change (so the test above can fail)', async () => {
    const { e: run } = await startBound('aws-mini');
    const stranger = identity(run, 'someone-else', ['not-ccm-migrate']);
    await expect(planUpgrade({ clients: stranger, options: {}, pollMs: 10 })).rejects.toMatchObject({
      name: 'KubeApiRejected',
      message: expect.stringMatching(/forbidden/),
    });
  }, 60_000);

  it('needs escalate: without it the CCM’s ClusterRole is refused and the upgrade rolls back', async () => {
    const withoutEscalate = (docs: RbacRole[]) =>
      docs.map((d) => ({
        ...d,
        rules: d.rules?.map((r) => ({ ...r, verbs: r.verbs.filter((v) => v !== 'escalate') })),
      }));
    const { e: run, clients } = await startBound('aws-mini', withoutEscalate as never);
    const up = await run.upgrade({ clients });
    expect(up.error?.name).toBe('RolledBack');
    expect(up.error?.cause).toMatch(
      /clusterroles.*forbidden|attempting to grant RBAC permissions not currently held/s,
    );
  }, 120_000);
});
