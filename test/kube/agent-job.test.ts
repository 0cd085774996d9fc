/**
 * The agent as a Job, through the real @kubernetes/client-node against the twin over HTTP: the twin runs
 * Jobs pinned to a node against that node's files and restarts its kubelet when the agent asks.
 */
import { createHash } from 'node:crypto';
import { mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import { PatchStrategy, setHeaderOptions, type V1Job } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentBundle } from '../../lib/agent/bundle.ts';
import { LAUNCHER_COMMAND } from '../../lib/agent/launcher.ts';
import {
  AGENT_BUNDLE_ENV,
  AGENT_GO_CONFIGMAP,
  AGENT_GO_ENV,
  AGENT_GO_UNTIL_ENV,
  AGENT_REQUEST_ENV,
  AGENT_SERVICE_ACCOUNT,
  AGENT_SHA256_ENV,
  type AgentRequest,
} from '../../lib/agent/protocol.ts';
import {
  AgentBundleMismatchError,
  AgentFailedError,
  ClusterUnreachableError,
  InvalidInputError,
  NotReadyYetError,
} from '../../lib/errors.ts';
import { removeGoSignals } from '../../lib/kube/agent-account.ts';
import {
  AGENT_CONFIGMAP,
  AGENT_HASH_ANNOTATION,
  AGENT_PRESTARTED_LABEL,
  agentJobName,
  DEFAULT_AGENT_IMAGE,
  prestartAgentJob,
  runAgentJob,
} from '../../lib/kube/agent-job.ts';
import { clientsFromKubeconfigFile, clientsFromKubeconfigText } from '../../lib/kube/clients.ts';
import { Deadline } from '../../lib/kube/deadline.ts';
import { parseImageReference } from '../../lib/providers/image-overrides.ts';
import { hostPath } from '../../lib/twin/context.ts';
import { eventually, FIXTURES, fixtureSpec, startTestTwin, type TestTwin } from '../twin/running-twin.ts';

const FLAGS_ENV = '/var/lib/kubelet/kubeadm-flags.env';
const KAS = '/etc/kubernetes/manifests/kube-apiserver.yaml';
const NS = 'kube-system';
const UNBOUNDED = Deadline.in(Number.POSITIVE_INFINITY);
const FAST = { pollMs: 10, timeoutMs: 10_000, deadline: UNBOUNDED };

let t: TestTwin;
beforeAll(async () => {
  t = await startTestTwin(await fixtureSpec(FIXTURES.awsMini));
});
afterAll(async () => {
  await t?.stop();
});

const TO_EXTERNAL = { flags: { 'cloud-provider': 'external', 'cloud-config': null } };
const toExternal = (runId: string): AgentRequest => ({ op: 'set-flags', runId, kubelet: TO_EXTERNAL });

async function jobGone(name: string): Promise<boolean> {
  return t.batch.readNamespacedJob({ name, namespace: NS }).then(
    () => false,
    () => true,
  );
}

const mtime = async (node: string, file: string): Promise<number> =>
  (await stat(hostPath(t.twin.stateDir, node, file))).mtimeMs;

describe('runAgentJob against the twin', () => {
  it('inspects a node: ships the bundle in a ConfigMap, reads the answer, deletes the Job', async () => {
    const request: AgentRequest = { op: 'inspect', runId: 'r1', paths: [KAS] };
    const result = await runAgentJob(t, { node: 'cp-1', request, ...FAST });
    expect(result).toMatchObject({ op: 'inspect', ok: true, changed: false });
    expect(result.files.find((f) => f.path === KAS)).toMatchObject({
      kind: 'static-pod',
      flags: { 'cloud-provider': 'aws', 'cloud-config': '/etc/kubernetes/cloud.conf' },
    });
    expect(result.files.find((f) => f.path === FLAGS_ENV)?.flags?.['cloud-provider']).toBe('aws');

    const bundle = await agentBundle();
    const cm = await t.core.readNamespacedConfigMap({ name: AGENT_CONFIGMAP, namespace: NS });
    expect(cm.data?.['agent.mjs']).toBe(bundle);
    expect(cm.metadata?.annotations?.[AGENT_HASH_ANNOTATION]).toBe(
      createHash('sha256').update(bundle).digest('hex'),
    );
    expect(cm.metadata?.managedFields?.map((f) => f.manager)).toEqual(['ccm-migrate']);
    await eventually(() => jobGone(agentJobName('cp-1', request)), { what: 'the Job deleted' });
  });

  it('leaves the bundle ConfigMap alone when it holds the bundle', async () => {
    const before = await t.core.readNamespacedConfigMap({ name: AGENT_CONFIGMAP, namespace: NS });
    const fresh = clientsFromKubeconfigFile(t.twin.kubeconfigPath);
    await runAgentJob(fresh, { node: 'cp-1', request: { op: 'inspect', runId: 'r2' }, ...FAST });
    const after = await t.core.readNamespacedConfigMap({ name: AGENT_CONFIGMAP, namespace: NS });
    expect(after.metadata?.resourceVersion).toBe(before.metadata?.resourceVersion);
  });

  it('refuses to run a bundle edited since it was applied, changing nothing, and applies it again next time', async () => {
    const fresh = clientsFromKubeconfigFile(t.twin.kubeconfigPath);
    await runAgentJob(fresh, { node: 'worker-1', request: { op: 'inspect', runId: 'r3' }, ...FAST });
    // Known to be in place for these clients, so not read again: the Job itself finds the edit.
    const cm = await t.core.readNamespacedConfigMap({ name: AGENT_CONFIGMAP, namespace: NS });
    const edited = `${cm.data?.['agent.mjs']}\n// edited\n`;
    await t.core.replaceNamespacedConfigMap({
      name: AGENT_CONFIGMAP,
      namespace: NS,
      body: { ...cm, data: { 'agent.mjs': edited } },
    });
    const flags = await readFile(hostPath(t.twin.stateDir, 'worker-1', FLAGS_ENV), 'utf8');
    const refused = runAgentJob(fresh, { node: 'worker-1', request: toExternal('r3'), ...FAST });
    await expect(refused).rejects.toThrow(AgentBundleMismatchError);
    await expect(refused).rejects.toThrow(
      /ConfigMap kube-system\/ccm-migrate-agent is not the one this run applied.*nothing on node worker-1 was changed/,
    );
    await expect(refused).rejects.toThrow(createHash('sha256').update(edited).digest('hex'));
    expect(await readFile(hostPath(t.twin.stateDir, 'worker-1', FLAGS_ENV), 'utf8')).toBe(flags);
    // The next attempt reads the ConfigMap again: its data, not its annotation, says it is not the bundle.
    await runAgentJob(fresh, { node: 'worker-1', request: { op: 'inspect', runId: 'r4' }, ...FAST });
    const restored = await t.core.readNamespacedConfigMap({ name: AGENT_CONFIGMAP, namespace: NS });
    expect(restored.data?.['agent.mjs']).toBe(await agentBundle());
  });

  it('puts the bundle in place once when Jobs start on several nodes at once', async () => {
    await t.core.deleteNamespacedConfigMap({ name: AGENT_CONFIGMAP, namespace: NS });
    const fresh = clientsFromKubeconfigFile(t.twin.kubeconfigPath);
    // Agent Jobs are created by POST; the only PATCH they send is the bundle ConfigMap's apply.
    const patches = (): number => t.twin.api.stats().byVerb.patch ?? 0;
    const before = patches();
    await Promise.all(
      ['cp-1', 'worker-1', 'worker-2'].map((node) =>
        runAgentJob(fresh, { node, request: { op: 'inspect', runId: 'r6' }, ...FAST }),
      ),
    );
    expect(patches() - before).toBe(1);
    const cm = await t.core.readNamespacedConfigMap({ name: AGENT_CONFIGMAP, namespace: NS });
    expect(cm.data?.['agent.mjs']).toBe(await agentBundle());
  });

  it('sees the Job finish through a watch, not at its next poll', async () => {
    const started = Date.now();
    // A poll of a minute: only the watch can end this wait within the test's time.
    const result = await runAgentJob(t, {
      node: 'worker-2',
      request: { op: 'inspect', runId: 'r7' },
      pollMs: 60_000,
      timeoutMs: 120_000,
      deadline: UNBOUNDED,
    });
    expect(result.ok).toBe(true);
    expect(Date.now() - started).toBeLessThan(30_000);
  });

  it('moves worker-1’s kubelet to external, which the kubelet runs after its restart; again changes nothing; restore goes back', async () => {
    const restarts = t.twin.nodes.kubelet('worker-1').restarts;
    const original = await t.readFile('worker-1', FLAGS_ENV);
    const result = await runAgentJob(t, { node: 'worker-1', request: toExternal('up-w1'), ...FAST });
    expect(result).toMatchObject({ ok: true, changed: true, restartKubelet: true });
    expect(result.files.find((f) => f.path === FLAGS_ENV)).toMatchObject({
      changed: true,
      backup: `/etc/kubernetes/ccm-migrate-backup/up-w1${FLAGS_ENV}`,
    });
    await eventually(() => t.twin.nodes.kubelet('worker-1').flags.get('cloud-provider') === 'external', {
      what: 'worker-1’s kubelet on --cloud-provider=external',
    });
    expect(t.twin.nodes.kubelet('worker-1').restarts).toBe(restarts + 1);
    expect(t.twin.nodes.kubelet('worker-1').flags.has('cloud-config')).toBe(false);
    expect(t.twin.nodes.kubelet('worker-2').flags.get('cloud-provider')).toBe('aws');

    const written = await t.readFile('worker-1', FLAGS_ENV);
    const writtenAt = await mtime('worker-1', FLAGS_ENV);
    const again = await runAgentJob(t, { node: 'worker-1', request: toExternal('up-w1'), ...FAST });
    expect(again).toMatchObject({ ok: true, changed: false, restartKubelet: false });
    expect(again.files.find((f) => f.path === FLAGS_ENV)?.changed).toBe(false);
    expect(await t.readFile('worker-1', FLAGS_ENV)).toBe(written);
    expect(await mtime('worker-1', FLAGS_ENV)).toBe(writtenAt);

    const restored = await runAgentJob(t, {
      node: 'worker-1',
      request: { op: 'restore', runId: 'up-w1' },
      ...FAST,
    });
    expect(restored).toMatchObject({ ok: true, changed: true, restartKubelet: true });
    expect(await t.readFile('worker-1', FLAGS_ENV)).toBe(original);
    await eventually(() => t.twin.nodes.kubelet('worker-1').flags.get('cloud-provider') === 'aws', {
      what: 'worker-1’s kubelet back on aws',
    });
  });

  it('fails with AgentFailedError naming the file it cannot parse, having written nothing', async () => {
    const broken = '/etc/kubernetes/extra/broken.yaml';
    await mkdir(hostPath(t.twin.stateDir, 'cp-1', '/etc/kubernetes/extra'), { recursive: true });
    await writeFile(hostPath(t.twin.stateDir, 'cp-1', broken), 'kind: Pod\nspec: {containers: [\n');
    const flags = await t.readFile('cp-1', FLAGS_ENV);
    const request: AgentRequest = {
      op: 'set-flags',
      runId: 'up-broken',
      kubelet: TO_EXTERNAL,
      staticPods: [{ path: broken, flags: { 'cloud-provider': null } }],
    };
    const error = await runAgentJob(t, { node: 'cp-1', request, ...FAST }).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(AgentFailedError);
    expect((error as Error).message).toMatch(
      /^agent on node cp-1: \/etc\/kubernetes\/extra\/broken\.yaml: not valid YAML \([A-Z_]+ at line \d+, column \d+\)$/,
    );
    expect(await t.readFile('cp-1', FLAGS_ENV)).toBe(flags);
    await eventually(() => jobGone(agentJobName('cp-1', request)), { what: 'the failed Job deleted' });
  });

  it('leaves a Job it gave up on, and a retry reads that Job’s answer instead of running the agent again', async () => {
    const request = toExternal('up-w2');
    const name = agentJobName('worker-2', request);
    const early = await runAgentJob(t, {
      node: 'worker-2',
      request,
      pollMs: 10,
      timeoutMs: 0,
      deadline: UNBOUNDED,
    }).catch((e: unknown) => e);
    expect(early).toBeInstanceOf(NotReadyYetError);
    expect((early as Error).message).toContain(`agent Job ${NS}/${name} on node worker-2`);

    const job: V1Job = await t.batch.readNamespacedJob({ name, namespace: NS });
    expect(job.metadata?.labels).toEqual({
      'app.kubernetes.io/name': 'ccm-migrate-agent',
      'app.kubernetes.io/managed-by': 'ccm-migrate',
      'ccm-migrate/op': 'set-flags',
    });
    expect(job.spec).toMatchObject({
      backoffLimit: 0,
      activeDeadlineSeconds: 600,
      ttlSecondsAfterFinished: 3600,
    });
    const pod = job.spec?.template.spec;
    expect(pod).toMatchObject({
      nodeName: 'worker-2',
      hostPID: true,
      restartPolicy: 'Never',
      tolerations: [{ operator: 'Exists' }],
      volumes: [
        { name: 'host', hostPath: { path: '/' } },
        { name: 'agent', configMap: { name: AGENT_CONFIGMAP } },
      ],
    });
    expect(pod?.containers[0]).toMatchObject({
      image: DEFAULT_AGENT_IMAGE,
      command: LAUNCHER_COMMAND,
      env: [
        { name: AGENT_REQUEST_ENV, value: JSON.stringify(request) },
        { name: AGENT_BUNDLE_ENV, value: '/opt/ccm-migrate/agent.mjs' },
        {
          name: AGENT_SHA256_ENV,
          value: createHash('sha256')
            .update(await agentBundle())
            .digest('hex'),
        },
      ],
      securityContext: { privileged: true },
      volumeMounts: [
        { name: 'host', mountPath: '/host' },
        { name: 'agent', mountPath: '/opt/ccm-migrate', readOnly: true },
      ],
    });

    // The first attempt's agent changed the file; a second run would have answered changed: false.
    const retried = await runAgentJob(t, { node: 'worker-2', request, ...FAST });
    expect(retried).toMatchObject({ ok: true, changed: true });
    await eventually(() => jobGone(name), { what: 'the reused Job deleted' });
    const rerun = await runAgentJob(t, { node: 'worker-2', request, ...FAST });
    expect(rerun).toMatchObject({ ok: true, changed: false });
  });

  it('pre-starts a Job whose agent waits for its go, which runAgentJob of the same request gives', async () => {
    const request: AgentRequest = { op: 'set-flags', runId: 'pre-w1', kubelet: { flags: { v: '4' } } };
    const name = agentJobName('worker-1', request);
    const before = await t.readFile('worker-1', FLAGS_ENV);
    await prestartAgentJob(t, { node: 'worker-1', request });
    await prestartAgentJob(t, { node: 'worker-1', request }); // a second pre-start leaves the first alone

    const job: V1Job = await t.batch.readNamespacedJob({ name, namespace: NS });
    expect(job.metadata?.labels?.[AGENT_PRESTARTED_LABEL]).toBe('true');
    expect(job.spec?.template.spec).toMatchObject({
      serviceAccountName: AGENT_SERVICE_ACCOUNT,
      automountServiceAccountToken: true,
    });
    const env = job.spec?.template.spec?.containers[0]?.env ?? [];
    expect(env.find((e) => e.name === AGENT_GO_ENV)?.value).toMatch(
      new RegExp(`^${NS}/${AGENT_GO_CONFIGMAP}/${name}/pre-w1:[0-9a-f]{16}$`),
    );
    // Its agent waits no longer than its Job allows: the Job's deadline is the wait's plus the usual.
    expect(Number(env.find((e) => e.name === AGENT_GO_UNTIL_ENV)?.value)).toBeGreaterThan(Date.now());
    expect(job.spec?.activeDeadlineSeconds).toBe(600 + 540);
    // The agent's account: get, list and watch on the go ConfigMap alone.
    const role = (await t.objects.read({
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'Role',
      metadata: { name: AGENT_SERVICE_ACCOUNT, namespace: NS },
    })) as { rules?: unknown };
    expect(role.rules).toEqual([
      {
        apiGroups: [''],
        resources: ['configmaps'],
        verbs: ['get', 'list', 'watch'],
        resourceNames: [AGENT_GO_CONFIGMAP],
      },
    ]);
    // Its pod runs, and waits: nothing on the node changes before the go.
    await eventually(
      async () =>
        (
          await t.core.listNamespacedPod({
            namespace: NS,
            labelSelector: `batch.kubernetes.io/job-name=${name}`,
          })
        ).items[0]?.status?.phase === 'Running',
      { what: 'the pre-started pod running' },
    );
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(await t.readFile('worker-1', FLAGS_ENV)).toBe(before);
    const go = await t.core.readNamespacedConfigMap({ name: AGENT_GO_CONFIGMAP, namespace: NS });
    expect(go.data?.[name]).toBeUndefined();

    // Its turn, told to expect it, reads it first: no create refused with 409.
    const result = await runAgentJob(t, { node: 'worker-1', request, ...FAST, prestarted: true });
    expect(result).toMatchObject({ ok: true, changed: true });
    expect(await t.readFile('worker-1', FLAGS_ENV)).not.toBe(before);
    const given = await t.core.readNamespacedConfigMap({ name: AGENT_GO_CONFIGMAP, namespace: NS });
    expect(given.data?.[name]).toMatch(/^pre-w1:[0-9a-f]{16}$/);
  });

  it('starts a pre-started Job on its own go only: a key left by an earlier Job of its name is not it', async () => {
    const request: AgentRequest = { op: 'set-flags', runId: 'pre-w1b', kubelet: { flags: { v: '6' } } };
    const name = agentJobName('worker-1', request);
    const before = await t.readFile('worker-1', FLAGS_ENV);
    await prestartAgentJob(t, { node: 'worker-1', request });
    await t.core.patchNamespacedConfigMap(
      { name: AGENT_GO_CONFIGMAP, namespace: NS, body: { data: { [name]: 'pre-w1b:0000000000000000' } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(await t.readFile('worker-1', FLAGS_ENV)).toBe(before);
    expect(await runAgentJob(t, { node: 'worker-1', request, ...FAST })).toMatchObject({ changed: true });
    const given = await t.core.readNamespacedConfigMap({ name: AGENT_GO_CONFIGMAP, namespace: NS });
    expect(given.data?.[name]).toMatch(/^pre-w1b:[0-9a-f]{16}$/);
    expect(given.data?.[name]).not.toBe('pre-w1b:0000000000000000');

    // A run's keys go once its flips are done; another run's stay.
    await removeGoSignals(t, 'pre-w1b');
    const after = await t.core.readNamespacedConfigMap({ name: AGENT_GO_CONFIGMAP, namespace: NS });
    expect(after.data?.[name]).toBeUndefined();
    expect(Object.values(after.data ?? {}).some((v) => v.startsWith('pre-w1:'))).toBe(true);
  });

  it('starts a pre-started Job again when its agent got no go signal (a pod without its token)', async () => {
    const request: AgentRequest = { op: 'set-flags', runId: 'pre-w2', kubelet: { flags: { v: '5' } } };
    const name = agentJobName('worker-2', request);
    const before = await t.readFile('worker-2', FLAGS_ENV);
    await prestartAgentJob(t, { node: 'worker-2', request });
    // The same Job with no token in its pod: its agent cannot read its go, and refuses having changed nothing.
    const job = await t.batch.readNamespacedJob({ name, namespace: NS });
    await t.batch.deleteNamespacedJob({ name, namespace: NS, propagationPolicy: 'Background' });
    await eventually(() => jobGone(name), { what: 'the pre-started Job deleted' });
    const template = job.spec?.template ?? { spec: { containers: [] } };
    await t.batch.createNamespacedJob({
      namespace: NS,
      body: {
        metadata: { name, namespace: NS, labels: job.metadata?.labels ?? {} },
        spec: {
          ...job.spec,
          selector: undefined,
          template: {
            metadata: { labels: { 'app.kubernetes.io/name': 'ccm-migrate-agent' } },
            spec: {
              ...template.spec,
              containers: template.spec?.containers ?? [],
              automountServiceAccountToken: false,
            },
          },
        },
      },
    });
    const refused = await runAgentJob(t, { node: 'worker-2', request, ...FAST }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(NotReadyYetError);
    expect((refused as Error).message).toContain('got no go signal');
    expect(await t.readFile('worker-2', FLAGS_ENV)).toBe(before);
    await eventually(() => jobGone(name), { what: 'the refused Job deleted' });
    // The retry creates the Job afresh (told to expect one, it finds none), and its agent runs.
    expect(await runAgentJob(t, { node: 'worker-2', request, ...FAST, prestarted: true })).toMatchObject({
      ok: true,
      changed: true,
    });
  });
});

describe('runAgentJob without a cluster', () => {
  it('runs an agent image pinned by digest unless told otherwise', () => {
    expect(parseImageReference(DEFAULT_AGENT_IMAGE)?.digest).toMatch(/^sha256:[0-9a-f]{64}$/);
  });

  it('refuses a request the agent would refuse, before creating anything', async () => {
    const request = { op: 'set-flags', runId: 'no spaces allowed' } as AgentRequest;
    await expect(runAgentJob(t, { node: 'cp-1', request, deadline: UNBOUNDED })).rejects.toThrow(
      InvalidInputError,
    );
  });

  it('turns an unreachable API server into ClusterUnreachable', async () => {
    const kubeconfig = `apiVersion: v1
kind: Config
clusters: [{ name: c, cluster: { server: 'https://127.0.0.1:9' } }]
users: [{ name: u, user: { token: t } }]
contexts: [{ name: x, context: { cluster: c, user: u } }]
current-context: x
`;
    const clients = clientsFromKubeconfigText(kubeconfig, 'test kubeconfig');
    await expect(
      runAgentJob(clients, { node: 'n', request: { op: 'inspect', runId: 'r' }, deadline: UNBOUNDED }),
    ).rejects.toThrow(ClusterUnreachableError);
  });

  it('names Jobs after the request, within 63 characters', () => {
    const node = 'ip-10-0-12-34.eu-west-1.compute.internal';
    const a = agentJobName(node, { op: 'restart-kubelet', runId: 'r' });
    expect(a).toMatch(/^ccm-migrate-restart-kubelet-ip-10-0-12-34\.eu-[0-9a-f]{8}-[0-9a-f]{8}$/);
    expect(a.length).toBeLessThanOrEqual(63);
    expect(agentJobName(node, { op: 'restart-kubelet', runId: 'r' })).toBe(a);
    expect(agentJobName(node, { op: 'restart-kubelet', runId: 's' })).not.toBe(a);
    expect(agentJobName('worker-1', { op: 'inspect', runId: 'r' })).toMatch(
      /^ccm-migrate-inspect-worker-1-[0-9a-f]{8}$/,
    );
  });
});
