/**
 * assets/rbac/ccm-migrate.yaml against what ccm-migrate really asks of a cluster: every kind of run (plan,
 * upgrade, downgrade, drift checks both ways, the CCM as a DaemonSet under leader migration, an install of a
 * provider never in-tree) on every provider's twin, each API request recorded by the twin in RBAC's terms.
 * Every request must be allowed by the rules, and every rule must be used by some request: the grant is
 * exactly the calls. RBAC's evaluation is written out here (apiGroups × resources × verbs × resourceNames, a
 * Role only in its namespace) over the names the twin records as the authorizer sees them; the in-process
 * twin does not enforce it. The last block runs the same on a real kube-apiserver, whose authorizer does, and
 * asks it each named check to hold this reading of RBAC to it.
 */
import { writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { AuthorizationV1Api, KubeConfig, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { afterEach, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { AGENT_GO_CONFIGMAP, AGENT_SERVICE_ACCOUNT } from '../../lib/agent/protocol.ts';
import { checkDrift } from '../../lib/drift/check.ts';
import { agentAccountObjects } from '../../lib/kube/agent-account.ts';
import { AGENT_CONFIGMAP } from '../../lib/kube/agent-job.ts';
import { applyObjects } from '../../lib/kube/apply.ts';
import { clientsFromKubeconfigFile, type KubeClients } from '../../lib/kube/clients.ts';
import { readSecretMetadata } from '../../lib/kube/metadata.ts';
import { localContext } from '../../lib/local/context.ts';
import { planUpgrade } from '../../lib/local/plan.ts';
import { PROVIDERS, providerFacts } from '../../lib/providers/catalog.ts';
import { CCM_WORKLOADS } from '../../lib/providers/ccm-workload.ts';
import { renderCcmObjects } from '../../lib/providers/render.ts';
import { readOnlyAgent } from '../../lib/rehearse/agent.ts';
import { takeSnapshot } from '../../lib/rehearse/snapshot.ts';
import type { ResourceAccess } from '../../lib/twin/api/front-door.ts';
import { renderKubeconfig } from '../../lib/twin/kubeconfig.ts';
import { findByKind } from '../../lib/twin/resources.ts';
import { loadTwinSpec } from '../../lib/twin/spec.ts';
import { realApiRuns } from '../real-api.ts';
import { type E2E, startE2E } from './harness.ts';

interface Rule {
  readonly apiGroups: string[];
  readonly resources: string[];
  readonly verbs: string[];
  readonly resourceNames?: string[];
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

/** RBAC's RuleAllows: a rule with resourceNames allows only requests that name one of them. */
/** A request, or a check the authorizer makes of its own (escalate, bind). */
type Check = Omit<ResourceAccess, 'verb'> & { readonly verb: string };
/** An object as the requests on it name it, without their verb. */
type Target = Omit<ResourceAccess, 'verb'>;

const ruleAllows = (rule: Rule, a: Check): boolean =>
  rule.apiGroups.includes(a.group) &&
  rule.resources.includes(a.resource) &&
  rule.verbs.includes(a.verb) &&
  (!rule.resourceNames?.length || (a.name !== undefined && rule.resourceNames.includes(a.name)));

/** A ClusterRole (bound cluster-wide) allows in every namespace; a Role only in its own. */
function allowedBy(all: readonly RbacRole[], a: Check): boolean {
  return all.some(
    (role) =>
      (role.kind === 'ClusterRole' ||
        (a.namespace !== undefined && a.namespace === role.metadata.namespace)) &&
      role.rules.some((rule) => ruleAllows(rule, a)),
  );
}

const fixture = (name: string) => fileURLToPath(new URL(`../fixtures/twins/${name}.yaml`, import.meta.url));
const describeAccess = (a: Check) =>
  `${a.verb} ${a.group || 'core'}/${a.resource}${a.name ? ` ${a.name}` : ''}${a.namespace ? ` in ${a.namespace}` : ''}`;

/** Whether a Role ccm-migrate applies (the pre-started agents', lib/kube/agent-account.ts) grants this. */
function delegated(group: string, resource: string, verb: string, name: string | undefined): boolean {
  return agentAccountObjects('kube-system').some((o) =>
    ((o as { rules?: RbacRole['rules'] }).rules ?? []).some(
      (r) =>
        r.apiGroups.includes(group) &&
        r.resources.includes(resource) &&
        r.verbs.includes(verb) &&
        name !== undefined &&
        (r.resourceNames ?? []).includes(name),
    ),
  );
}

/**
 * What ccm-migrate applies for any provider, as a Deployment or a DaemonSet CCM (the scenarios below run a
 * few of these), and the roles its bindings refer to (the names the authorizer checks bind on).
 */
function rendered(): { objects: Target[]; roleRefs: Target[] } {
  const all = PROVIDERS.flatMap((provider) =>
    CCM_WORKLOADS.flatMap((workload) =>
      renderCcmObjects({
        provider,
        kubernetesVersion: 'v1.30.14',
        clusterName: 'kubernetes',
        replicas: 1,
        workload,
        cloudConfigHostPath: '/etc/kubernetes/cloud.conf',
      }),
    ),
  );
  const objects = all.map((o) => {
    const type = findByKind(o.apiVersion, o.kind);
    if (!type) throw new Error(`the twin knows no ${o.apiVersion} ${o.kind}`);
    return {
      group: type.group,
      resource: type.plural,
      namespace: o.metadata.namespace,
      name: o.metadata.name,
    };
  });
  const roleRefs = all.flatMap((o) => {
    const ref = (o as { roleRef?: { kind: 'Role' | 'ClusterRole'; name: string } }).roleRef;
    if (!ref) return [];
    const resource = ref.kind === 'Role' ? 'roles' : 'clusterroles';
    return [
      { group: 'rbac.authorization.k8s.io', resource, namespace: o.metadata.namespace, name: ref.name },
    ];
  });
  return { objects, roleRefs };
}

/**
 * What the manifest must allow on objects whose names are known: each object ccm-migrate applies (written,
 * read, removed), escalate on its ClusterRoles, bind on the roles its bindings refer to, the CCM's Lease.
 */
function namedChecks(): Check[] {
  const { objects, roleRefs } = rendered();
  const leases = PROVIDERS.map((p) => providerFacts(p)).map(({ leaseName, namespace }) => ({
    group: 'coordination.k8s.io',
    resource: 'leases',
    namespace,
    name: leaseName,
  }));
  return [
    ...objects.flatMap((o) => ['get', 'create', 'patch', 'delete'].map((verb) => ({ ...o, verb }))),
    ...objects.filter((o) => o.resource === 'clusterroles').map((o) => ({ ...o, verb: 'escalate' })),
    ...roleRefs.map((r) => ({ ...r, verb: 'bind' })),
    ...leases.flatMap((l) => ['get', 'watch', 'delete'].map((verb) => ({ ...l, verb }))),
  ];
}

const check = (c: Omit<Check, 'name' | 'namespace'> & { name?: string; namespace?: string }): Check => ({
  name: undefined,
  namespace: undefined,
  ...c,
});
const RBAC = 'rbac.authorization.k8s.io';
/** What ccm-migrate never asks: other Secrets, lists it does not make, objects of its kinds not its own. */
const NEVER_ASKED: readonly Check[] = [
  check({ verb: 'get', group: '', resource: 'secrets', namespace: 'default' }),
  check({ verb: 'list', group: '', resource: 'secrets', namespace: 'kube-system' }),
  check({ verb: 'list', group: '', resource: 'pods' }),
  check({
    verb: 'get',
    group: '',
    resource: 'secrets',
    namespace: 'kube-system',
    name: 'bootstrap-token-abcdef',
  }),
  check({ verb: 'patch', group: '', resource: 'configmaps', namespace: 'kube-system', name: 'coredns' }),
  check({ verb: 'create', group: '', resource: 'configmaps', namespace: 'kube-system' }),
  check({
    verb: 'delete',
    group: 'apps',
    resource: 'daemonsets',
    namespace: 'kube-system',
    name: 'kube-proxy',
  }),
  check({ verb: 'patch', group: RBAC, resource: 'clusterroles', name: 'cluster-admin' }),
  check({ verb: 'escalate', group: RBAC, resource: 'clusterroles', name: 'cluster-admin' }),
  check({ verb: 'bind', group: RBAC, resource: 'clusterroles', name: 'cluster-admin' }),
  check({
    verb: 'bind',
    group: RBAC,
    resource: 'roles',
    namespace: 'kube-system',
    name: 'kubeadm:nodes-kubeadm-config',
  }),
];

/** Every request of every scenario below, gathered for the "every rule used" check at the end. */
const seen = new Map<string, ResourceAccess>();

/** Run `scenario` on a fresh twin of `name` and record the requests it made (not the harness's own). */
async function requestsOf(name: string, scenario: (e: E2E) => Promise<void>): Promise<ResourceAccess[]> {
  const e = await startE2E(await loadTwinSpec(fixture(name)));
  try {
    const key = (a: ResourceAccess) => JSON.stringify([a.verb, a.group, a.resource, a.namespace, a.name]);
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

  it('allows every request of a twin snapshot (on OpenStack, its credentials Secret by name)', async () => {
    all = await roles();
    const made = await requestsOf('openstack-secret-mini', async (e) => {
      await takeSnapshot({ clients: e.t, agent: readOnlyAgent(e.t), runId: 'snap-rbac' });
    });
    expect(made.some((a) => a.resource === 'secrets')).toBe(true);
    expect(made.filter((a) => !allowedBy(all, a)).map(describeAccess)).toEqual([]);
  });

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

  it('names every object an upgrade of any provider applies, as a Deployment or a DaemonSet', async () => {
    all = await roles();
    expect(
      namedChecks()
        .filter((a) => !allowedBy(all, a))
        .map(describeAccess),
    ).toEqual([]);
  });

  it('would refuse what ccm-migrate never asks (so the checks above can fail)', async () => {
    all = await roles();
    expect(NEVER_ASKED.filter((a) => allowedBy(all, a)).map(describeAccess)).toEqual([]);
  });

  // Last in the file (its tests run in order): every scenario above has run.
  it("grants nothing the runs above did not ask for (each rule's every verb on every resource and name used)", () => {
    const { objects, roleRefs } = rendered();
    const inScope = (role: RbacRole, namespace: string | undefined) =>
      role.kind === 'ClusterRole' || namespace === role.metadata.namespace;
    const unused: string[] = [];
    for (const role of all) {
      for (const rule of role.rules) {
        for (const group of rule.apiGroups) {
          for (const resource of rule.resources) {
            const used = (a: Target, name: string | undefined) =>
              a.group === group &&
              a.resource === resource &&
              inScope(role, a.namespace) &&
              (name === undefined || a.name === name);
            for (const verb of rule.verbs) {
              const asked = (name: string | undefined) =>
                [...seen.values()].some((a) => a.verb === verb && used(a, name));
              for (const name of rule.resourceNames ?? [undefined]) {
                // escalate and bind only on the ClusterRoles ccm-migrate applies and the roles its bindings
                // refer to; a request's verb asked by some run, on a name asked for or one ccm-migrate
                // applies for a provider or CCM workload the runs here leave out.
                // And a verb that a Role ccm-migrate applies grants (the pre-started agents' own): RBAC lets
                // one create such a Role only while holding what it grants.
                const granted = AUTHORIZER_ONLY_VERBS.has(verb)
                  ? name !== undefined && (verb === 'bind' ? roleRefs : objects).some((o) => used(o, name))
                  : (asked(undefined) &&
                      (name === undefined || asked(name) || objects.some((o) => used(o, name)))) ||
                    delegated(group, resource, verb, name);
                if (!granted) {
                  unused.push(`${role.kind} ${verb} ${group || 'core'}/${resource}${name ? ` ${name}` : ''}`);
                }
              }
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

  /** A kubeconfig for a user of the cluster CA with these groups, through the twin's address. */
  function kubeconfigOf(run: E2E, user: string, groups: string[]): string {
    const pki = run.t.twin.realApi?.pki;
    if (!pki) throw new Error('not a real-API twin');
    const file = path.join(run.t.twin.stateDir, `kubeconfig-${user}`);
    const tls = pki.clientCert(user, groups);
    writeFileSync(file, renderKubeconfig({ name: user, server: run.t.twin.url, tls }), { mode: 0o600 });
    return file;
  }

  const identity = (run: E2E, user: string, groups: string[]): KubeClients =>
    clientsFromKubeconfigFile(kubeconfigOf(run, user, groups));

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
    // The pre-started agents' account, as the real authorizer reads it: their go signals, nothing else. A
    // client certificate named as the ServiceAccount is that account to RBAC (its subject is the user name).
    const agent = identity(run, `system:serviceaccount:kube-system:${AGENT_SERVICE_ACCOUNT}`, [
      'system:serviceaccounts',
      'system:serviceaccounts:kube-system',
    ]);
    const namespace = 'kube-system';
    await agent.core.readNamespacedConfigMap({ name: AGENT_GO_CONFIGMAP, namespace });
    const selected = await agent.core.listNamespacedConfigMap({
      namespace,
      fieldSelector: `metadata.name=${AGENT_GO_CONFIGMAP}`,
    });
    expect(selected.items.map((c) => c.metadata?.name)).toEqual([AGENT_GO_CONFIGMAP]);
    const forbidden = (request: Promise<unknown>) =>
      expect(request.catch((err: { code?: number }) => err.code)).resolves.toBe(403);
    await forbidden(agent.core.readNamespacedConfigMap({ name: AGENT_CONFIGMAP, namespace }));
    await forbidden(agent.core.listNamespacedConfigMap({ namespace }));
    await forbidden(
      agent.core.patchNamespacedConfigMap(
        { name: AGENT_GO_CONFIGMAP, namespace, body: { data: { x: 'go' } } },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
      ),
    );
    await forbidden(agent.core.listNode());
    const down = await run.downgrade(asUser);
    expect(down.error).toBeUndefined();
    expect((await check('in-tree')).status).toBe('clean');
    // The way back removed the account with the agent's code.
    const gone = (request: Promise<unknown>) =>
      expect(request.catch((err: { code?: number }) => err.code)).resolves.toBe(404);
    await gone(run.t.core.readNamespacedServiceAccount({ name: AGENT_SERVICE_ACCOUNT, namespace }));
    await gone(run.t.core.readNamespacedConfigMap({ name: AGENT_GO_CONFIGMAP, namespace }));
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

  it('refuses the bound identity objects of its kinds by names outside the lists (403)', async () => {
    const { clients } = await startBound('aws-mini');
    const configMap = (name: string) => ({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name, namespace: 'kube-system' },
      data: { k: 'v' },
    });
    const forbidden = { name: 'KubeApiRejected', status: 403 };
    // Created by server-side apply, as ccm-migrate creates: its agent's ConfigMap is allowed, another is not.
    await expect(applyObjects(clients, [configMap(AGENT_CONFIGMAP)])).resolves.toHaveLength(1);
    await expect(applyObjects(clients, [configMap('not-ccm-migrate')])).rejects.toMatchObject(forbidden);
    await expect(
      readSecretMetadata(clients, { namespace: 'kube-system', name: 'bootstrap-token-abcdef' }),
    ).rejects.toMatchObject(forbidden);
  }, 60_000);

  it("answers every check of the manifest as this file's reading of RBAC does (the in-process twin's)", async () => {
    const { e: run } = await startBound('aws-mini');
    const all = await roles();
    const kc = new KubeConfig();
    kc.loadFromFile(kubeconfigOf(run, 'ccm-migrate-reviewer', ['ccm-migrate']));
    const reviews = kc.makeApiClient(AuthorizationV1Api);
    const checks = [...namedChecks(), ...NEVER_ASKED];
    const differing: string[] = [];
    for (const c of checks) {
      const [resource, subresource] = c.resource.split('/') as [string, string?];
      const review = await reviews.createSelfSubjectAccessReview({
        body: {
          spec: {
            resourceAttributes: {
              verb: c.verb,
              group: c.group,
              resource,
              ...(subresource ? { subresource } : {}),
              ...(c.namespace ? { namespace: c.namespace } : {}),
              ...(c.name ? { name: c.name } : {}),
            },
          },
        },
      });
      const real = review.status?.allowed === true;
      if (real !== allowedBy(all, c)) differing.push(`${describeAccess(c)}: real ${real}`);
    }
    expect(checks.length).toBeGreaterThan(50);
    expect(differing).toEqual([]);
  }, 60_000);

  it("says which rule to change when the cluster's OpenStack credentials Secret is not the one it names", async () => {
    const otherSecret = (docs: RbacRole[]) =>
      docs.map((d) => ({
        ...d,
        rules: d.rules?.map((r) =>
          r.resources.includes('secrets') ? { ...r, resourceNames: ['another-secret'] } : r,
        ),
      }));
    const { clients } = await startBound('openstack-secret-mini', otherSecret as never);
    await expect(planUpgrade({ clients, options: {}, pollMs: 10 })).rejects.toMatchObject({
      name: 'PreflightFailed',
      message: expect.stringMatching(
        /openstack-credentials.*resourceNames in assets\/rbac\/ccm-migrate\.yaml/,
      ),
    });
  }, 120_000);

  it('migrates both ways under the manifest from before the pre-started agents: no pre-start, nothing refused', async () => {
    // An install whose RBAC was not applied again: no rule names the agents' account or go ConfigMap.
    const agentOnes = new Set(['serviceaccounts', 'roles', 'rolebindings']);
    const beforeAgents = (docs: RbacRole[]) =>
      docs.map((d) => ({
        ...d,
        rules: d.rules?.filter(
          (r) =>
            !r.resourceNames?.includes(AGENT_GO_CONFIGMAP) &&
            !(r.resourceNames?.includes(AGENT_SERVICE_ACCOUNT) && r.resources.some((x) => agentOnes.has(x))),
        ),
      }));
    const { e: run, clients } = await startBound('aws-mini', beforeAgents as never);
    const progress: string[] = [];
    const up = await run.upgrade({ clients, onProgress: (p) => progress.push(p.message) });
    expect(up.error).toBeUndefined();
    expect(progress.some((m) => m.startsWith('could not pre-start the agent of node'))).toBe(true);
    const down = await run.downgrade({ clients });
    expect(down.error).toBeUndefined();
  }, 120_000);

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
