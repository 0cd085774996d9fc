/**
 * What a pre-started agent may do with the API, and how it is told to go. An agent Job created ahead of its
 * node's turn (lib/kube/agent-job.ts) must not start its change until its turn: it waits for a key named
 * after its Job in one ConfigMap, with the value its Job was created with (`<runId>:<nonce>`: a key left
 * from an earlier Job of the same name is not this one's go). Its pod runs as a ServiceAccount allowed
 * `get`, `list` and `watch` on that ConfigMap alone (by name; a list or watch must select it by
 * metadata.name), nothing else: the agent still reads no other object and writes none.
 *
 * The account is put in place once per process and namespace, as the agent's code is: one read of the go
 * ConfigMap (applied last), and where it is missing a server-side apply of the ServiceAccount, the Role,
 * its RoleBinding and the ConfigMap (empty). A go is one JSON merge patch of that ConfigMap's data (no
 * resourceVersion, so any number of slots give theirs at once). A run's keys are taken back once its
 * kubelet flips are done (removeGoSignals); the way back removes the whole account (removeAgentAccount).
 *
 * Access refused (403) to these objects, by a ClusterRole from before they existed: nothing of them can be
 * there for ccm-migrate to take back, and a pre-start that cannot be made only costs its head start.
 */
import { randomBytes } from 'node:crypto';
import { type KubernetesObject, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { AGENT_GO_CONFIGMAP, AGENT_NAME, AGENT_SERVICE_ACCOUNT } from '../agent/protocol.ts';
import { FIELD_MANAGER } from './apply.ts';
import type { KubeClients } from './clients.ts';
import { call, httpStatus, orNotFound } from './errors.ts';
import { OncePerNamespace } from './once-per-namespace.ts';

const LABELS = { 'app.kubernetes.io/name': AGENT_NAME, 'app.kubernetes.io/managed-by': 'ccm-migrate' };

/** The ServiceAccount, its Role and RoleBinding, and the go ConfigMap, in `namespace`. */
export function agentAccountObjects(namespace: string): KubernetesObject[] {
  const metadata = (name: string) => ({ name, namespace, labels: LABELS });
  return [
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata: metadata(AGENT_SERVICE_ACCOUNT) },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'Role',
      metadata: metadata(AGENT_SERVICE_ACCOUNT),
      rules: [
        {
          apiGroups: [''],
          resources: ['configmaps'],
          verbs: ['get', 'list', 'watch'],
          resourceNames: [AGENT_GO_CONFIGMAP],
        },
      ],
    } as KubernetesObject,
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: metadata(AGENT_SERVICE_ACCOUNT),
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: AGENT_SERVICE_ACCOUNT },
      subjects: [{ kind: 'ServiceAccount', name: AGENT_SERVICE_ACCOUNT, namespace }],
    } as KubernetesObject,
    { apiVersion: 'v1', kind: 'ConfigMap', metadata: metadata(AGENT_GO_CONFIGMAP) },
  ];
}

/** Put in place (or being put there), per clients and namespace. */
const accounts = new OncePerNamespace<void>();

async function applyAccount(clients: KubeClients, namespace: string): Promise<void> {
  const there = await orNotFound(
    call(`read ConfigMap ${namespace}/${AGENT_GO_CONFIGMAP}`, () =>
      clients.core.readNamespacedConfigMap({ name: AGENT_GO_CONFIGMAP, namespace }),
    ),
  );
  if (there) return;
  for (const obj of agentAccountObjects(namespace)) {
    await call(`apply ${obj.kind} ${namespace}/${obj.metadata?.name}`, () =>
      clients.objects.patch(obj, undefined, undefined, FIELD_MANAGER, true, PatchStrategy.ServerSideApply),
    );
  }
}

/**
 * Whether the agents' account is in place (its go ConfigMap, the last of it applied). Unreadable: assumed
 * so. Found, it counts as put in place for these clients: a pre-start then does not read it again.
 */
export async function agentAccountPresent(clients: KubeClients, namespace = 'kube-system'): Promise<boolean> {
  const read = call(`read ConfigMap ${namespace}/${AGENT_GO_CONFIGMAP}`, () =>
    clients.core.readNamespacedConfigMap({ name: AGENT_GO_CONFIGMAP, namespace }),
  );
  return read.then(
    () => {
      void accounts.get(clients, namespace, () => Promise.resolve());
      return true;
    },
    (err: unknown) => {
      if (httpStatus(err) === 404) return false;
      if (httpStatus(err) === 403) return true;
      throw err;
    },
  );
}

/** Make sure the pre-started agents' account and go ConfigMap are in place (a failure is not remembered). */
export function ensureAgentAccount(clients: KubeClients, namespace: string): Promise<void> {
  return accounts.get(clients, namespace, () => applyAccount(clients, namespace));
}

function patchGo(clients: KubeClients, namespace: string, data: Record<string, string | null>) {
  return call(`patch ConfigMap ${namespace}/${AGENT_GO_CONFIGMAP}`, () =>
    clients.core.patchNamespacedConfigMap(
      { name: AGENT_GO_CONFIGMAP, namespace, body: { data } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    ),
  );
}

/** `<runId>:<nonce>`: the value a pre-started Job of this run waits for. */
export function goValue(runId: string): string {
  return `${runId}:${randomBytes(8).toString('hex')}`;
}

/**
 * Tell the pre-started agents of these Jobs to go (each Job's name to the value from its Job), in one
 * patch: each waiting agent sees one change, however many Jobs it lets go. The go ConfigMap gone (deleted
 * meanwhile): the account is put back and the go given. Refused (403): the agents get no go, refuse once
 * their wait is over, and their turns start them afresh.
 */
export async function giveGoSignals(
  clients: KubeClients,
  values: Readonly<Record<string, string>>,
  namespace = 'kube-system',
): Promise<void> {
  if (Object.keys(values).length === 0) return;
  const give = () => patchGo(clients, namespace, values);
  await give().catch(async (err: unknown) => {
    if (httpStatus(err) === 403) return;
    if (httpStatus(err) !== 404) throw err;
    accounts.forget(clients, namespace);
    await ensureAgentAccount(clients, namespace);
    await give();
  });
}

/** Take these Jobs' go signals back in one patch; nothing to take back (404, 403) is no error. */
export async function takeGoSignalsBack(
  clients: KubeClients,
  jobs: readonly string[],
  namespace = 'kube-system',
): Promise<void> {
  if (jobs.length === 0) return;
  await patchGo(clients, namespace, Object.fromEntries(jobs.map((job) => [job, null]))).catch(
    (err: unknown) => {
      if (httpStatus(err) !== 404 && httpStatus(err) !== 403) throw err;
    },
  );
}

/**
 * Take run `runId`'s go signals back (its kubelet flips are done, lib/steps/ccm.ts): a waiting agent reads
 * the whole ConfigMap on each change, so it holds no more than a run's keys. Another run's (a restore
 * queued on a node that is down) stay.
 */
export async function removeGoSignals(
  clients: KubeClients,
  runId: string,
  namespace = 'kube-system',
): Promise<void> {
  const name = AGENT_GO_CONFIGMAP;
  const current = await call(`read ConfigMap ${namespace}/${name}`, () =>
    clients.core.readNamespacedConfigMap({ name, namespace }),
  ).catch((err: unknown) => {
    if (httpStatus(err) === 404 || httpStatus(err) === 403) return undefined;
    throw err;
  });
  const keys = Object.entries(current?.data ?? {})
    .filter(([, value]) => value.startsWith(`${runId}:`))
    .map(([key]) => key);
  await takeGoSignalsBack(clients, keys, namespace);
}

/**
 * Remove the account and the go ConfigMap (the agent's code goes too: lib/steps/restore.ts), and forget
 * them: the next pre-start of these clients applies them again. How many objects were there.
 */
export async function removeAgentAccount(clients: KubeClients, namespace = 'kube-system'): Promise<number> {
  let removed = 0;
  for (const obj of agentAccountObjects(namespace).reverse()) {
    await call(`delete ${obj.kind} ${namespace}/${obj.metadata?.name}`, () =>
      clients.objects.delete(obj as never),
    ).then(
      () => {
        removed += 1;
      },
      (err: unknown) => {
        if (httpStatus(err) !== 404 && httpStatus(err) !== 403) throw err;
      },
    );
  }
  accounts.forget(clients, namespace);
  return removed;
}
