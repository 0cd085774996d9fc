/**
 * Running the node agent on one node: a Job pinned to the node (spec.nodeName: no scheduler, every taint
 * tolerated), privileged with the host's `/` at /host and the host's PID namespace (to restart the kubelet
 * through nsenter), running the agent bundle from a ConfigMap through the launcher in its own spec, which
 * first checks the image's nsenter and the bundle's sha256 (lib/agent/launcher.ts). The answer is the pod's
 * termination message.
 *
 * The Job's name is a function of the request, so a retried step finds the Job of its earlier attempt
 * (409 on create) and reads that answer instead of running the agent twice. A Job is deleted once its
 * answer is read; one whose wait timed out is left for the retry.
 */
import { createHash } from 'node:crypto';
import type { KubernetesObject, V1Job, V1Pod } from '@kubernetes/client-node';
import { agentBundle } from '../agent/bundle.ts';
import { LAUNCHER_COMMAND } from '../agent/launcher.ts';
import {
  AGENT_BUNDLE_ENV,
  AGENT_GO_CONFIGMAP,
  AGENT_GO_ENV,
  AGENT_GO_UNTIL_ENV,
  AGENT_NAME,
  AGENT_REQUEST_ENV,
  AGENT_SERVICE_ACCOUNT,
  AGENT_SHA256_ENV,
  type AgentRequest,
  AgentRequestSchema,
  type AgentResult,
  AgentResultSchema,
} from '../agent/protocol.ts';
import { AgentFailedError, DeadlineReachedError, InvalidInputError, NotReadyYetError } from '../errors.ts';
import { parseImageReference } from '../providers/image-overrides.ts';
import { ensureAgentAccount, giveGoSignals, goValue, removeAgentAccount } from './agent-account.ts';
import { refusalError } from './agent-refusal.ts';
import { applyObjects } from './apply.ts';
import type { KubeClients } from './clients.ts';
import type { Deadline } from './deadline.ts';
import { call, httpStatus, orNotFound } from './errors.ts';
import { OncePerNamespace } from './once-per-namespace.ts';
import { latest, type WaitOptions, waitFor, wakeOnObject } from './wait.ts';
import { labelSelectorOf } from './well-known.ts';

/**
 * Any image with Node 22 and nsenter runs the bundle. The official image through ECR Public: no Docker Hub
 * pull limits, reachable from AWS without credentials; alpine keeps the pull small, and its busybox has
 * nsenter. Pinned by digest (the multi-arch index of node:22.14.0-alpine3.21, as Docker Hub publishes it and
 * ECR Public mirrors it), so every node runs the same bytes whatever the tag points to later.
 */
export const DEFAULT_AGENT_IMAGE =
  'public.ecr.aws/docker/library/node:22.14.0-alpine3.21@sha256:9bef0ef1e268f60627da9ba7d7605e8831d5b56ad07487d24d1aa386336d1944';
export const AGENT_CONFIGMAP = 'ccm-migrate-agent';

/**
 * `<image>`, or `<image> (not pinned by digest)`: an operator's image may name a tag (a mirror that retags),
 * and the plan says so, since whatever the tag points to then runs the checked bundle.
 */
export function describeAgentImage(image: string = DEFAULT_AGENT_IMAGE): string {
  return parseImageReference(image)?.digest ? image : `${image} (not pinned by digest)`;
}

/** On the ConfigMap: the sha256 of the bundle it holds, for whoever reads it (the Job carries its own). */
export const AGENT_HASH_ANNOTATION = 'ccm-migrate/agent-sha256';
const BUNDLE_KEY = 'agent.mjs';
const BUNDLE_DIR = '/opt/ccm-migrate';
/** Long enough for a slow image pull; a Job past it fails (and its pod is killed). */
const JOB_DEADLINE_SECONDS = 600;
/**
 * A restore is right whenever it runs: one queued on a node whose kubelet is down (lib/steps/restore.ts)
 * waits for the kubelet for up to a week, and puts the node back in-tree the moment it returns.
 */
const RESTORE_DEADLINE_SECONDS = 7 * 24 * 3600;
/**
 * How long a pre-started agent waits for its go, from its Job's creation; its Job's deadline is this much
 * longer, so the change itself has the usual time. A restore's wait is not bounded so: one queued on a node
 * whose kubelet is down starts days later, its go long given.
 */
const GO_WINDOW_SECONDS = 540;
/** An answer nobody read (the orchestrator gave up) is kept this long for a retry, then collected. */
const JOB_TTL_SECONDS = 3600;
/** On each agent Job: the operation it runs. */
export const AGENT_OP_LABEL = 'ccm-migrate/op';
/** On a pre-started agent Job: its agent waits for its go signal (lib/kube/agent-account.ts). */
export const AGENT_PRESTARTED_LABEL = 'ccm-migrate/pre-started';
const LABELS = { 'app.kubernetes.io/name': AGENT_NAME, 'app.kubernetes.io/managed-by': 'ccm-migrate' };
const AGENT_LABEL_SELECTOR = labelSelectorOf(LABELS);

export interface AgentJobOptions {
  readonly node: string;
  readonly request: AgentRequest;
  /** @default kube-system */
  readonly namespace?: string;
  /** @default DEFAULT_AGENT_IMAGE */
  readonly image?: string;
  /** How long the call may take, its Job's deletion included, before NotReadyYet; @default 60 s. */
  readonly timeoutMs?: number;
  /** @default 1 s */
  readonly pollMs?: number;
  /** The invocation's deadline: the call is one draw on it. */
  readonly deadline: Deadline;
  readonly signal?: AbortSignal;
  /**
   * The Job was most likely pre-started (lib/steps/prestart.ts): read it first and create it only when it
   * is not there, instead of a create that the API server refuses with 409.
   */
  readonly prestarted?: boolean;
  /**
   * The Job was pre-started and its go given already, with others' in one patch (giveGoSignals): it is
   * only waited for. Gone meanwhile: NotReadyYet, and the retry starts it afresh.
   */
  readonly goGiven?: boolean;
}

/** A Job prestartAgentJob created, and the go value it waits for. */
export interface PrestartedAgent {
  readonly node: string;
  readonly job: string;
  readonly go: string;
}

function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

/** `ccm-migrate-<op>-<node>-<8 hex of the request>`, at most 63 characters (the node part hashed if need be). */
export function agentJobName(node: string, request: AgentRequest): string {
  const prefix = `ccm-migrate-${request.op}-`;
  const suffix = `-${sha256(JSON.stringify(request)).slice(0, 8)}`;
  const room = 63 - prefix.length - suffix.length;
  const nodePart =
    node.length <= room
      ? node
      : `${node.slice(0, room - 9).replace(/[-.]+$/, '')}-${sha256(node).slice(0, 8)}`;
  return `${prefix}${nodePart}${suffix}`;
}

/**
 * The bundle known to be in place (or being put there), per clients and namespace, by its sha256: one
 * ConfigMap read per process, not per Job, and one apply even when a preflight starts Jobs on every node at
 * once.
 */
const bundles = new OncePerNamespace<string>();

function ensureBundle(clients: KubeClients, namespace: string): Promise<string> {
  return bundles.get(clients, namespace, () => putBundle(clients, namespace));
}

/**
 * Forget that the bundle is in place, for one who just deleted its ConfigMap: the next Job of these clients
 * (the next run in this process, a warm Lambda) applies it again instead of naming a bundle that is gone.
 */
export function forgetAgentBundle(clients: KubeClients, namespace = 'kube-system'): void {
  bundles.forget(clients, namespace);
}

/** Apply the bundle unless the ConfigMap holds it already (its data, not its annotation); its sha256. */
async function putBundle(clients: KubeClients, namespace: string): Promise<string> {
  const bundle = await agentBundle();
  const hash = sha256(bundle);
  const current = await orNotFound(
    call(`read ConfigMap ${namespace}/${AGENT_CONFIGMAP}`, () =>
      clients.core.readNamespacedConfigMap({ name: AGENT_CONFIGMAP, namespace }),
    ),
  );
  if (current?.data?.[BUNDLE_KEY] === bundle) return hash;
  const configMap: KubernetesObject & { data: Record<string, string> } = {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: {
      name: AGENT_CONFIGMAP,
      namespace,
      labels: LABELS,
      annotations: { [AGENT_HASH_ANNOTATION]: hash },
    },
    data: { [BUNDLE_KEY]: bundle },
  };
  await applyObjects(clients, [configMap]);
  return hash;
}

/**
 * The Job of `opts`. Pre-started: its pod runs as the agent's ServiceAccount with its token (the one API
 * access an agent has: its go signal) and waits for its go; otherwise no token at all.
 */
function agentJob(
  name: string,
  namespace: string,
  bundleSha256: string,
  opts: Pick<AgentJobOptions, 'node' | 'request' | 'image' | 'timeoutMs'>,
  /** Pre-started: the go value it waits for. */
  go?: string,
): V1Job {
  const restore = opts.request.op === 'restore';
  const deadline = Math.max(JOB_DEADLINE_SECONDS, Math.ceil((opts.timeoutMs ?? 0) / 1000));
  const gate: { labels: Record<string, string>; account: object; env: { name: string; value: string }[] } =
    go !== undefined
      ? {
          labels: { [AGENT_PRESTARTED_LABEL]: 'true' },
          account: { serviceAccountName: AGENT_SERVICE_ACCOUNT, automountServiceAccountToken: true },
          env: [
            {
              name: AGENT_GO_ENV,
              value: goSignalOf(namespace, name, go),
            },
            ...(restore
              ? []
              : [{ name: AGENT_GO_UNTIL_ENV, value: String(Date.now() + GO_WINDOW_SECONDS * 1000) }]),
          ],
        }
      : { labels: {}, account: { automountServiceAccountToken: false }, env: [] };
  return {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: {
      name,
      namespace,
      labels: { ...LABELS, [AGENT_OP_LABEL]: opts.request.op, ...gate.labels },
    },
    spec: {
      backoffLimit: 0,
      activeDeadlineSeconds: restore
        ? RESTORE_DEADLINE_SECONDS
        : deadline + (go !== undefined ? GO_WINDOW_SECONDS : 0),
      ttlSecondsAfterFinished: JOB_TTL_SECONDS,
      template: {
        metadata: { labels: LABELS },
        spec: {
          nodeName: opts.node,
          restartPolicy: 'Never',
          hostPID: true,
          ...gate.account,
          tolerations: [{ operator: 'Exists' }],
          containers: [
            {
              name: 'agent',
              image: opts.image ?? DEFAULT_AGENT_IMAGE,
              command: [...LAUNCHER_COMMAND],
              env: [
                { name: AGENT_REQUEST_ENV, value: JSON.stringify(opts.request) },
                { name: AGENT_BUNDLE_ENV, value: `${BUNDLE_DIR}/${BUNDLE_KEY}` },
                { name: AGENT_SHA256_ENV, value: bundleSha256 },
                ...gate.env,
              ],
              securityContext: { privileged: true },
              terminationMessagePolicy: 'File',
              volumeMounts: [
                { name: 'host', mountPath: '/host' },
                { name: 'agent', mountPath: BUNDLE_DIR, readOnly: true },
              ],
            },
          ],
          volumes: [
            { name: 'host', hostPath: { path: '/', type: 'Directory' } },
            { name: 'agent', configMap: { name: AGENT_CONFIGMAP } },
          ],
        },
      },
    },
  };
}

/**
 * Create the Job, or take the one an earlier attempt of the same request created, or the one pre-started
 * for it, which is then told to go with the value it waits for. `readFirst`: a pre-started Job is
 * expected, so it is looked for before a create is tried.
 */
async function createOrReuse(
  clients: KubeClients,
  job: V1Job,
  namespace: string,
  readFirst = false,
): Promise<void> {
  const name = job.metadata?.name as string;
  const read = () =>
    call(`read Job ${namespace}/${name}`, () => clients.batch.readNamespacedJob({ name, namespace }));
  const there = readFirst ? await orNotFound(read()) : undefined;
  if (there) return reuse(clients, there, namespace);
  try {
    await call(`create Job ${namespace}/${name}`, () =>
      clients.batch.createNamespacedJob({ namespace, body: job }),
    );
  } catch (err) {
    if (httpStatus(err) !== 409) throw err;
    await reuse(clients, await read(), namespace);
  }
}

async function reuse(clients: KubeClients, existing: V1Job, namespace: string): Promise<void> {
  const name = existing.metadata?.name as string;
  if (existing.metadata?.deletionTimestamp) {
    throw new NotReadyYetError(`agent Job ${namespace}/${name} of an earlier attempt is still being deleted`);
  }
  const value = goValueOf(existing);
  if (value && !finished(existing)) await giveGoSignals(clients, { [name]: value }, namespace);
}

/** AGENT_GO_ENV of a pre-started Job: `<namespace>/<go ConfigMap>/<its name>/<the value it waits for>`. */
function goSignalOf(namespace: string, job: string, value: string): string {
  return `${namespace}/${AGENT_GO_CONFIGMAP}/${job}/${value}`;
}

/** The value a pre-started Job waits for (goSignalOf's last part); undefined for any other Job. */
function goValueOf(job: V1Job): string | undefined {
  const env = job.spec?.template.spec?.containers[0]?.env?.find((e) => e.name === AGENT_GO_ENV);
  return env?.value?.split('/')[3];
}

/** A request the agent would refuse is refused here, before anything is created. */
function refuseInvalid(request: AgentRequest): void {
  const parsed = AgentRequestSchema.safeParse(request);
  if (!parsed.success)
    throw new InvalidInputError(`invalid agent request: ${parsed.error.issues[0]?.message}`);
}

/**
 * Create `opts`'s Job ahead of its turn: its pod starts (image pulled, container running) and its agent
 * waits for the go that runAgentJob of the same request gives it, so the pod's start is off the turn's
 * critical path. It touches nothing on the node before that go. A Job already there (the turn came first,
 * or an earlier attempt pre-started it) is left as it is: undefined.
 */
export async function prestartAgentJob(
  clients: KubeClients,
  opts: Pick<AgentJobOptions, 'node' | 'request' | 'namespace' | 'image' | 'timeoutMs'>,
): Promise<PrestartedAgent | undefined> {
  refuseInvalid(opts.request);
  const namespace = opts.namespace ?? 'kube-system';
  // Named as runAgentJob names it, from the request as given: its turn must find this Job.
  const name = agentJobName(opts.node, opts.request);
  const [bundleSha256] = await Promise.all([
    ensureBundle(clients, namespace),
    ensureAgentAccount(clients, namespace),
  ]);
  const go = goValue(opts.request.runId);
  const job = agentJob(name, namespace, bundleSha256, opts, go);
  return call(`create Job ${namespace}/${name}`, () =>
    clients.batch.createNamespacedJob({ namespace, body: job }),
  ).then(
    () => ({ node: opts.node, job: name, go }),
    (err: unknown) => {
      if (httpStatus(err) !== 409) throw err;
      return undefined;
    },
  );
}

/**
 * Delete pre-started Jobs whose turns will not come (the step failed before them): their agents, never
 * given the go, changed nothing. Best effort: a Job left refuses at its bound, still changing nothing.
 */
export async function cancelPrestartedAgentJobs(
  clients: KubeClients,
  jobs: readonly string[],
  namespace = 'kube-system',
): Promise<void> {
  await Promise.allSettled(
    jobs.map((name) =>
      call(`delete Job ${namespace}/${name}`, () =>
        clients.batch.deleteNamespacedJob({ name, namespace, propagationPolicy: 'Background' }),
      ),
    ),
  );
}

/**
 * Remove the agents' account (agent-account.ts) unless an unfinished pre-started Job may still read its go
 * (a restore queued on a node that is down): for a run refused in preflight, which pre-started agents and
 * must leave the cluster as it found it. The next pre-start applies the account again.
 */
export async function removeAgentAccountUnlessAwaited(
  clients: KubeClients,
  namespace = 'kube-system',
): Promise<void> {
  const jobs = await unfinishedAgentJobs(clients, namespace);
  if (jobs.some((job) => job.metadata?.labels?.[AGENT_PRESTARTED_LABEL])) return;
  await removeAgentAccount(clients, namespace);
}

/** Agent Jobs that have not finished (e.g. restores queued on nodes whose kubelet is down). */
export async function unfinishedAgentJobs(clients: KubeClients, namespace = 'kube-system'): Promise<V1Job[]> {
  const jobs = await call(`list agent Jobs in ${namespace}`, () =>
    clients.batch.listNamespacedJob({ namespace, labelSelector: AGENT_LABEL_SELECTOR }),
  );
  return jobs.items.filter((job) => !finished(job) && !job.metadata?.deletionTimestamp);
}

/**
 * Delete the agent Jobs still waiting on `node` except those running `keep`: when a node's kubelet is down,
 * a queued restore must be the only thing it runs when it returns, not an upgrade step queued before it.
 */
export async function cancelQueuedAgentJobs(
  clients: KubeClients,
  node: string,
  keep: AgentRequest['op'],
  namespace = 'kube-system',
): Promise<string[]> {
  const cancelled: string[] = [];
  for (const job of await unfinishedAgentJobs(clients, namespace)) {
    const name = job.metadata?.name as string;
    if (job.spec?.template.spec?.nodeName !== node || job.metadata?.labels?.[AGENT_OP_LABEL] === keep)
      continue;
    await call(`delete Job ${namespace}/${name}`, () =>
      clients.batch.deleteNamespacedJob({ name, namespace, propagationPolicy: 'Background' }),
    ).catch((err: unknown) => {
      if (httpStatus(err) !== 404) throw err;
    });
    cancelled.push(name);
  }
  return cancelled;
}

function finished(job: V1Job): { type: string; reason?: string } | undefined {
  return job.status?.conditions?.find(
    (c) => (c.type === 'Complete' || c.type === 'Failed') && c.status === 'True',
  );
}

async function jobPods(clients: KubeClients, namespace: string, name: string): Promise<V1Pod[]> {
  const pods = await call(`list pods of Job ${namespace}/${name}`, () =>
    clients.core.listNamespacedPod({ namespace, labelSelector: `batch.kubernetes.io/job-name=${name}` }),
  );
  return pods.items;
}

function agentState(pod: V1Pod | undefined) {
  return pod?.status?.containerStatuses?.find((c) => c.name === 'agent')?.state;
}

/**
 * Delete the Job once its answer is read. A single control plane whose kube-apiserver the agent just
 * restarted answers nothing for a while: keep trying within what is left of the call's bound. Past it, the
 * Job is left to its TTL (and a retry reads the same answer).
 */
async function deleteJob(
  clients: KubeClients,
  namespace: string,
  name: string,
  wait: WaitOptions,
): Promise<void> {
  try {
    await waitFor(
      `delete Job ${namespace}/${name}`,
      async () => {
        await call(`delete Job ${namespace}/${name}`, () =>
          clients.batch.deleteNamespacedJob({ name, namespace, propagationPolicy: 'Background' }),
        ).catch((err: unknown) => {
          if (httpStatus(err) !== 404) throw err;
        });
        return true;
      },
      wait,
    );
  } catch {
    // Left to its TTL: the answer is what matters.
  }
}

/**
 * Run one agent request on `node` and return its answer. ok:false → AgentFailedError with the agent's
 * error; no answer within the timeout → NotReadyYetError with the Job left for the retry (DeadlineReached
 * when the invocation's time ran out first); API trouble → the named errors of `call()`.
 */
export async function runAgentJob(clients: KubeClients, opts: AgentJobOptions): Promise<AgentResult> {
  refuseInvalid(opts.request);
  opts.signal?.throwIfAborted();
  // The whole call, the Job's deletion too, is one draw on the invocation's deadline: a step's worst case
  // counts it once.
  return opts.deadline.within(opts.timeoutMs ?? 60_000, (bound) => runJob(clients, opts, bound));
}

async function runJob(clients: KubeClients, opts: AgentJobOptions, bound: Deadline): Promise<AgentResult> {
  const namespace = opts.namespace ?? 'kube-system';
  const { node, signal } = opts;
  const name = agentJobName(node, opts.request);
  const wait = { waitMs: bound.remainingMs(), pollMs: opts.pollMs ?? 1000, deadline: bound };
  const bundleSha256 = await ensureBundle(clients, namespace);
  if (!opts.goGiven) {
    await createOrReuse(clients, agentJob(name, namespace, bundleSha256, opts), namespace, opts.prestarted);
  }

  let pod: V1Pod | undefined;
  let outcome: { type: string; reason?: string } | undefined;
  try {
    outcome = await waitFor(
      `agent Job ${namespace}/${name} on node ${node} to finish`,
      async (change) => {
        signal?.throwIfAborted();
        const job = await latest(change, async () => {
          const read = await orNotFound(
            call(`read Job ${namespace}/${name}`, () => clients.batch.readNamespacedJob({ name, namespace })),
          );
          // Deleted by someone else before it finished (an operator cleaning kube-system): the retry creates
          // it again, where a 404 would have failed the run (the soak's deleted agent Jobs).
          if (!read) {
            throw new NotReadyYetError(
              `agent Job ${namespace}/${name} on node ${node} was deleted before it finished`,
            );
          }
          return read;
        });
        return job && finished(job);
      },
      { ...wait, wakeOn: wakeOnObject(clients, `/apis/batch/v1/namespaces/${namespace}/jobs`, name) },
    );
    pod = (await jobPods(clients, namespace, name)).find((p) => agentState(p)?.terminated);
  } catch (err) {
    if (!(err instanceof NotReadyYetError || err instanceof DeadlineReachedError)) throw err;
    // The ConfigMap may have gone meanwhile: the retry checks it again.
    forgetAgentBundle(clients, namespace);
    const waiting = agentState((await jobPods(clients, namespace, name).catch(() => []))[0])?.waiting?.reason;
    if (waiting) err.message = `${err.message} (pod ${waiting})`;
    throw err;
  }

  const terminated = agentState(pod)?.terminated;
  const answer = AgentResultSchema.safeParse(safeJson(terminated?.message));
  await deleteJob(clients, namespace, name, wait);
  if (!answer.success) {
    const how = terminated
      ? `exit code ${terminated.exitCode}${terminated.reason ? `, ${terminated.reason}` : ''}`
      : `Job ${outcome?.type}${outcome?.reason ? ` (${outcome.reason})` : ''} without a finished pod`;
    throw new AgentFailedError(`agent on node ${node}: no answer from Job ${namespace}/${name} (${how})`);
  }
  if (answer.data.refused === 'no-go-signal') {
    // A pre-started Job whose go came too late, or could not be read: it changed nothing, and it is
    // deleted by now, so the retry starts the agent afresh.
    throw new NotReadyYetError(
      `the pre-started agent Job ${namespace}/${name} on node ${node} got no go signal (${answer.data.error ?? 'no detail'}); nothing on the node was changed, it starts again`,
    );
  }
  if (answer.data.refused) {
    // The ConfigMap may have changed since it was applied: the next attempt reads it again.
    forgetAgentBundle(clients, namespace);
    throw refusalError({
      refusal: answer.data.refused,
      node,
      image: opts.image ?? DEFAULT_AGENT_IMAGE,
      configMap: `${namespace}/${AGENT_CONFIGMAP}`,
      detail: answer.data.error,
    });
  }
  if (!answer.data.ok) throw new AgentFailedError(`agent on node ${node}: ${answer.data.error ?? 'failed'}`);
  return answer.data;
}

function safeJson(text: string | undefined): unknown {
  try {
    return text === undefined ? undefined : JSON.parse(text);
  } catch {
    return undefined;
  }
}
