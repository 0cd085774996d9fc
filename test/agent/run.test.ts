/**
 * The agent's operations against a host root made of a kubeadm v1.26 control-plane node's real files
 * (assets/twins/hosts/kubeadm-v1.26-aws): what it reports, writes, backs up and restores.
 */
import { createHash } from 'node:crypto';
import { chmod, mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { BACKUP_DIR } from '../../lib/agent/files.ts';
import { type AgentRequest, type AgentResult, TERMINATION_MESSAGE_LIMIT } from '../../lib/agent/protocol.ts';
import { fitResult, runAgent } from '../../lib/agent/run.ts';

const HOSTS = new URL('../../assets/twins/hosts/kubeadm-v1.26-aws/', import.meta.url);
const KAS = '/etc/kubernetes/manifests/kube-apiserver.yaml';
const KCM = '/etc/kubernetes/manifests/kube-controller-manager.yaml';
const FLAGS_ENV = '/var/lib/kubelet/kubeadm-flags.env';
const DEFAULTS = '/etc/default/kubelet';
const CONFIG = '/var/lib/kubelet/config.yaml';
const CLOUD_CONF = '/etc/kubernetes/cloud.conf';
const NODE_FILES = [KAS, KCM, FLAGS_ENV, DEFAULTS, CONFIG, CLOUD_CONF];

/** What the upgrade asks of a control-plane node (lib/steps/edits.ts). */
const GATES = { DisableCloudProviders: null, DisableKubeletCloudCredentialProviders: null };
const UPGRADE: AgentRequest = {
  op: 'set-flags',
  runId: 'up-1',
  staticPods: [
    {
      path: KAS,
      flags: { 'cloud-provider': null, 'cloud-config': null },
      featureGates: GATES,
      dropUnusedCloudConfigVolume: true,
    },
    {
      path: KCM,
      flags: { 'cloud-provider': 'external', 'cloud-config': null },
      featureGates: GATES,
      dropUnusedCloudConfigVolume: true,
    },
  ],
  kubelet: {
    flags: { 'cloud-provider': 'external', 'cloud-config': null },
    featureGates: { DisableKubeletCloudCredentialProviders: null },
  },
};

let root: string;
/** The host's own name, as its UTS namespace gives it. */
let hostname: string;
/** The running kubelet's command line, as /proc gives it. */
let kubelet: string[] | undefined;
const hostPath = (file: string): string => path.join(root, file);
const read = (file: string): Promise<string> => readFile(hostPath(file), 'utf8');
const exists = (file: string): Promise<boolean> =>
  stat(hostPath(file)).then(
    () => true,
    () => false,
  );

async function put(file: string, text: string): Promise<void> {
  await mkdir(path.dirname(hostPath(file)), { recursive: true });
  await writeFile(hostPath(file), text);
}

beforeEach(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), 'ccm-migrate-agent-'));
  hostname = 'ip-10-0-1-10';
  kubelet = undefined;
  for (const file of NODE_FILES) {
    const text = await readFile(new URL(file.slice(1), HOSTS), 'utf8');
    await put(file, text.replaceAll('{{nodeIP}}', '10.0.1.10'));
  }
  await chmod(hostPath(KAS), 0o600);
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

const run = (request: unknown): Promise<AgentResult> =>
  runAgent(request, {
    hostRoot: root,
    hostname: async () => hostname,
    kubeletCommandLine: async () => kubelet,
  });
const fileOf = (result: AgentResult, file: string) => result.files.find((f) => f.path === file);
async function snapshot(): Promise<Record<string, string>> {
  return Object.fromEntries(await Promise.all(NODE_FILES.map(async (f) => [f, await read(f)])));
}

describe('inspect', () => {
  it('reports the asked files and every kubelet source present: hash, size, kind, cloud flags', async () => {
    const result = await run({ op: 'inspect', runId: 'r', paths: [KAS, CLOUD_CONF, '/etc/not-there'] });
    const kas = await readFile(hostPath(KAS));
    expect(result).toMatchObject({ op: 'inspect', ok: true, changed: false, restartKubelet: false });
    expect(result.files.map((f) => f.path)).toEqual([
      KAS,
      CLOUD_CONF,
      '/etc/not-there',
      FLAGS_ENV,
      DEFAULTS,
      CONFIG,
    ]);
    expect(fileOf(result, KAS)).toEqual({
      path: KAS,
      exists: true,
      size: kas.length,
      sha256: createHash('sha256').update(kas).digest('hex'),
      kind: 'static-pod',
      flags: { 'cloud-provider': 'aws', 'cloud-config': CLOUD_CONF },
    });
    expect(fileOf(result, CLOUD_CONF)).toMatchObject({ kind: 'other' });
    expect(fileOf(result, CLOUD_CONF)?.flags).toBeUndefined();
    expect(fileOf(result, '/etc/not-there')).toEqual({ path: '/etc/not-there', exists: false });
    expect(fileOf(result, FLAGS_ENV)).toMatchObject({
      kind: 'kubelet-env',
      flags: { 'cloud-provider': 'aws', 'cloud-config': CLOUD_CONF },
    });
    expect(fileOf(result, DEFAULTS)).toMatchObject({ kind: 'kubelet-env', flags: {} });
    expect(fileOf(result, CONFIG)).toMatchObject({ kind: 'kubelet-config', flags: {} });
  });
});

describe('set-flags and restore', () => {
  it('on a dry run reports the diffs and changes nothing', async () => {
    const before = await snapshot();
    const result = await run({ ...UPGRADE, dryRun: true });
    expect(result).toMatchObject({ ok: true, changed: false, restartKubelet: false });
    expect(result.files.map((f) => [f.path, f.changed])).toEqual([
      [KAS, true],
      [KCM, true],
      [FLAGS_ENV, true],
      [DEFAULTS, false],
      [CONFIG, false],
    ]);
    expect(fileOf(result, FLAGS_ENV)?.diff).toContain(
      '+KUBELET_KUBEADM_ARGS="--cloud-provider=external --container-runtime-endpoint',
    );
    expect(fileOf(result, FLAGS_ENV)?.backup).toBeUndefined();
    expect(await snapshot()).toEqual(before);
    expect(await exists(BACKUP_DIR)).toBe(false);
  });

  it('rewrites, backs up once, asks for a kubelet restart; again changes nothing; restore gives the original bytes', async () => {
    const before = await snapshot();
    const first = await run(UPGRADE);
    expect(first).toMatchObject({ op: 'set-flags', ok: true, changed: true, restartKubelet: true });
    expect(fileOf(first, KAS)).toMatchObject({
      changed: true,
      kind: 'static-pod',
      flags: {},
      backup: `${BACKUP_DIR}/up-1${KAS}`,
    });
    expect(fileOf(first, KAS)?.diff).toMatch(
      /^--- \/etc\/kubernetes\/manifests\/kube-apiserver\.yaml\n\+\+\+ .*\n@@ /,
    );
    expect(fileOf(first, KAS)?.diff).toContain('\n-    - --cloud-provider=aws\n');
    expect(fileOf(first, KCM)?.flags?.['cloud-provider']).toBe('external');
    expect(fileOf(first, FLAGS_ENV)).toMatchObject({
      changed: true,
      flags: { 'cloud-provider': 'external' },
    });
    expect(await read(`${BACKUP_DIR}/up-1${KAS}`)).toBe(before[KAS]);
    expect(await read(`${BACKUP_DIR}/up-1${FLAGS_ENV}`)).toBe(before[FLAGS_ENV]);
    expect(await read(KAS)).not.toContain('cloud');
    expect((await stat(hostPath(KAS))).mode & 0o777).toBe(0o600);
    expect(JSON.stringify(first).length).toBeLessThanOrEqual(TERMINATION_MESSAGE_LIMIT);

    const written = await snapshot();
    const mtimes = await Promise.all(
      [KAS, KCM, FLAGS_ENV].map(async (f) => (await stat(hostPath(f))).mtimeMs),
    );
    const second = await run(UPGRADE);
    expect(second).toMatchObject({ ok: true, changed: false, restartKubelet: false });
    expect(second.files.every((f) => f.changed === false && f.diff === undefined)).toBe(true);
    expect(await snapshot()).toEqual(written);
    expect(
      await Promise.all([KAS, KCM, FLAGS_ENV].map(async (f) => (await stat(hostPath(f))).mtimeMs)),
    ).toEqual(mtimes);

    // A change later in the same run keeps the first backup: restore goes back to before the run.
    await run({ ...UPGRADE, staticPods: [{ path: KCM, flags: { v: '2' } }], kubelet: undefined });
    expect(await read(`${BACKUP_DIR}/up-1${KCM}`)).toBe(before[KCM]);

    const dry = await run({ op: 'restore', runId: 'up-1', dryRun: true });
    expect(dry).toMatchObject({ ok: true, changed: false });
    expect(dry.files.map((f) => [f.path, f.changed])).toEqual([
      [KAS, true],
      [KCM, true],
      [FLAGS_ENV, true],
    ]);
    expect(await read(KCM)).toContain('--v=2');

    const restored = await run({ op: 'restore', runId: 'up-1' });
    expect(restored).toMatchObject({ op: 'restore', ok: true, changed: true, restartKubelet: true });
    expect(fileOf(restored, FLAGS_ENV)?.diff).toContain('+KUBELET_KUBEADM_ARGS="--cloud-config=');
    expect(await snapshot()).toEqual(before);
    expect((await stat(hostPath(KAS))).mode & 0o777).toBe(0o600);
    const again = await run({ op: 'restore', runId: 'up-1', paths: [KAS] });
    expect(again).toMatchObject({
      ok: true,
      changed: false,
      restartKubelet: false,
      files: [{ path: KAS, changed: false }],
    });
  });

  it('skips named files the run never backed up when asked to, restoring the others', async () => {
    await run({ ...UPGRADE, staticPods: [] });
    const refused = await run({ op: 'restore', runId: 'up-1', paths: [KAS, FLAGS_ENV] });
    expect(refused).toMatchObject({ ok: false, changed: false });
    const restored = await run({ op: 'restore', runId: 'up-1', paths: [KAS, FLAGS_ENV], skipMissing: true });
    expect(restored).toMatchObject({ ok: true, changed: true, restartKubelet: true });
    expect(restored.files.map((f) => f.path)).toEqual([FLAGS_ENV]);
  });

  it('restores a manifest with edits on top in one write; without them, the original bytes again', async () => {
    const original = await read(KCM);
    await run(UPGRADE);
    const lm = { path: KCM, flags: { 'enable-leader-migration': 'true' } };
    const back = await run({ op: 'restore', runId: 'up-1', paths: [KCM], staticPods: [lm] });
    expect(back).toMatchObject({ ok: true, changed: true });
    const text = await read(KCM);
    expect(text).toContain('--cloud-provider=aws');
    expect(text).toContain('--enable-leader-migration=true');
    expect(await run({ op: 'restore', runId: 'up-1', paths: [KCM], staticPods: [lm] })).toMatchObject({
      changed: false,
    });
    expect(await run({ op: 'restore', runId: 'up-1', paths: [KCM] })).toMatchObject({ changed: true });
    expect(await read(KCM)).toBe(original);
  });

  it('restores a static pod alone without asking for a kubelet restart', async () => {
    await run(UPGRADE);
    const restored = await run({ op: 'restore', runId: 'up-1', paths: [KCM] });
    expect(restored).toMatchObject({ ok: true, changed: true, restartKubelet: false });
    expect(await read(KAS)).not.toContain('cloud');
  });

  it('creates kubeadm-flags.env when the node has none, and restore removes it again', async () => {
    await rm(hostPath(FLAGS_ENV));
    const result = await run({
      op: 'set-flags',
      runId: 'up-2',
      kubelet: { flags: { 'cloud-provider': 'external' } },
    });
    expect(fileOf(result, FLAGS_ENV)).toMatchObject({ exists: true, changed: true });
    expect(await read(FLAGS_ENV)).toBe('KUBELET_KUBEADM_ARGS="--cloud-provider=external"\n');
    const restored = await run({ op: 'restore', runId: 'up-2' });
    expect(fileOf(restored, FLAGS_ENV)).toEqual({
      path: FLAGS_ENV,
      exists: false,
      changed: true,
      diff: expect.any(String),
    });
    expect(await exists(FLAGS_ENV)).toBe(false);
  });

  it('writes nothing when a file cannot be parsed, and says which and why, never what it holds', async () => {
    const before = await snapshot();
    await put(
      KCM,
      'apiVersion: v1\nkind: Pod\nspec:\n  containers:\n  - command: [kube-controller-manager, --token=s3cr3t\n',
    );
    const broken = await read(KCM);
    const result = await run(UPGRADE);
    expect(result).toMatchObject({ ok: false, changed: false, restartKubelet: false, files: [] });
    expect(result.error).toMatch(
      /^\/etc\/kubernetes\/manifests\/kube-controller-manager\.yaml: not valid YAML \([A-Z_]+ at line \d+, column \d+\)$/,
    );
    expect(result.error).not.toContain('s3cr3t');
    expect(await snapshot()).toEqual({ ...before, [KCM]: broken });
    expect(await exists(BACKUP_DIR)).toBe(false);

    await put(KCM, await readFile(new URL('var/lib/kubelet/config.yaml', HOSTS), 'utf8'));
    expect((await run(UPGRADE)).error).toBe(`${KCM}: not a Pod manifest`);
    expect(
      (await run({ ...UPGRADE, staticPods: [{ path: '/etc/kubernetes/manifests/gone.yaml' }] })).error,
    ).toBe('/etc/kubernetes/manifests/gone.yaml: no such file');
    await writeFile(hostPath(KAS), Buffer.from([0x6b, 0x69, 0x6e, 0x64, 0xff, 0xfe]));
    expect((await run(UPGRADE)).error).toBe(`${KAS}: not UTF-8 text`);
  });

  it('refuses to restore a file the run has no backup of, before writing anything', async () => {
    await run(UPGRADE);
    const changed = await snapshot();
    const result = await run({ op: 'restore', runId: 'up-1', paths: [KAS, DEFAULTS] });
    expect(result).toMatchObject({
      ok: false,
      changed: false,
      error: `${DEFAULTS}: run up-1 has no backup of it`,
    });
    expect(await snapshot()).toEqual(changed);
    expect(await run({ op: 'restore', runId: 'other' })).toMatchObject({
      ok: true,
      changed: false,
      files: [],
    });
  });
});

describe('the kubelet keeps its Node name', () => {
  const NODE = 'ip-10-0-1-10.ec2.internal';
  const FLIP: AgentRequest = {
    op: 'set-flags',
    runId: 'up-1',
    kubelet: { flags: { 'cloud-provider': 'external' }, keepNodeName: NODE },
  };
  const override = async () => /--hostname-override=(\S+)/.exec(await read(FLAGS_ENV))?.[1];

  it('inspect reports the host’s name and any --hostname-override', async () => {
    expect((await run({ op: 'inspect', runId: 'r' })).host).toEqual({ hostname: 'ip-10-0-1-10' });
    await put(DEFAULTS, 'KUBELET_EXTRA_ARGS="--hostname-override=Worker-1 "\n');
    expect((await run({ op: 'inspect', runId: 'r' })).host).toEqual({
      hostname: 'ip-10-0-1-10',
      hostnameOverride: 'Worker-1',
    });
  });

  it('pins --hostname-override where the host’s name is not the Node’s; again changes nothing; restore takes it out', async () => {
    const before = await read(FLAGS_ENV);
    expect(await run(FLIP)).toMatchObject({ ok: true, changed: true });
    expect(await override()).toBe(NODE);
    expect(await run(FLIP)).toMatchObject({ ok: true, changed: false });
    expect(await run({ op: 'restore', runId: 'up-1' })).toMatchObject({ ok: true, changed: true });
    expect(await read(FLAGS_ENV)).toBe(before);
  });

  it('adds nothing where the host names the Node already (the kubelet lowercases it)', async () => {
    hostname = ' IP-10-0-1-10.EC2.Internal\n';
    expect(await run(FLIP)).toMatchObject({ ok: true, changed: true });
    expect(await override()).toBeUndefined();
  });

  it('replaces an override that would name another Node (in-tree AWS ignored it)', async () => {
    await put(DEFAULTS, 'KUBELET_EXTRA_ARGS="--hostname-override=worker-1"\n');
    expect(await run(FLIP)).toMatchObject({ ok: true, changed: true });
    expect(await read(DEFAULTS)).toContain(`--hostname-override=${NODE}`);
    expect(await override()).toBeUndefined();
  });
});

describe('the running kubelet', () => {
  it('inspect reports the checked flags on its command line beside those its flag files give', async () => {
    expect((await run({ op: 'inspect', runId: 'r' })).kubeletFlags).toBeUndefined();
    kubelet = [
      '/usr/bin/kubelet',
      '--config=/var/lib/kubelet/config.yaml',
      '--cloud-provider=aws',
      '--cloud-provider',
      'aws',
      '--v=2',
    ];
    expect((await run({ op: 'inspect', runId: 'r' })).kubeletFlags).toEqual({
      running: { 'cloud-provider': ['aws', 'aws'] },
      files: { 'cloud-provider': ['aws'], 'cloud-config': ['/etc/kubernetes/cloud.conf'] },
    });
  });

  it('inspect reports the gates of each --config-dir drop-in in merge order, and one it cannot read', async () => {
    const dir = '/etc/kubernetes/kubelet.conf.d';
    const header = 'apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n';
    await put(`${dir}/20-gates.conf`, `${header}featureGates:\n  DisableCloudProviders: false\n`);
    await put(`${dir}/10-sub/30-pods.conf`, `${header}maxPods: 50\n`);
    await put(`${dir}/15-bad.conf`, 'maxPods: 50\n');
    await put(`${dir}/README`, 'not a drop-in\n');
    expect((await run({ op: 'inspect', runId: 'r' })).kubeletDropIns).toBeUndefined();
    // The running kubelet's --config-dir, which a systemd drop-in may give where no flag file does.
    kubelet = ['/usr/bin/kubelet', `--config-dir=${dir}`];
    expect((await run({ op: 'inspect', runId: 'r' })).kubeletDropIns).toEqual([
      { path: `${dir}/10-sub/30-pods.conf` },
      { path: `${dir}/15-bad.conf`, error: 'not a KubeletConfiguration' },
      { path: `${dir}/20-gates.conf`, featureGates: 'DisableCloudProviders=false' },
    ]);
  });
});

describe('backups that cannot lie', () => {
  const sha = (bytes: Buffer | string) => createHash('sha256').update(bytes).digest('hex');

  it('reports what a run backed up, by digest, when asked in an inspect', async () => {
    const original = await readFile(hostPath(FLAGS_ENV));
    await run(UPGRADE);
    const result = await run({ op: 'inspect', runId: 'down-1', paths: [], backupsOf: 'up-1' });
    expect(result.backups?.[FLAGS_ENV]).toBe(sha(original));
    expect(Object.keys(result.backups ?? {}).sort()).toEqual([KAS, KCM, FLAGS_ENV].sort());
  });

  it('refuses, writing nothing, to restore from a backup that is not the original the snapshot recorded', async () => {
    const original = await readFile(hostPath(FLAGS_ENV));
    await run(UPGRADE);
    const changed = await snapshot();
    await writeFile(
      hostPath(`${BACKUP_DIR}/up-1${FLAGS_ENV}`),
      'KUBELET_KUBEADM_ARGS="--cloud-provider=gce"\n',
    );
    const refused = await run({ op: 'restore', runId: 'up-1', expected: { [FLAGS_ENV]: sha(original) } });
    expect(refused).toMatchObject({ ok: false, changed: false });
    expect(refused.error).toMatch(
      new RegExp(
        `^${FLAGS_ENV}: the backup \\(sha256 [0-9a-f]{12}…\\) is not the original the run recorded \\(sha256 ${sha(original).slice(0, 12)}…\\)`,
      ),
    );
    expect(await snapshot()).toEqual(changed);
  });

  it('restores when every backup is the original the snapshot recorded', async () => {
    const before = await snapshot();
    const expected = Object.fromEntries([KAS, KCM, FLAGS_ENV].map((f) => [f, sha(before[f] as string)]));
    await run(UPGRADE);
    expect(await run({ op: 'restore', runId: 'up-1', expected })).toMatchObject({ ok: true, changed: true });
    expect(await snapshot()).toEqual(before);
  });
});

describe('other requests', () => {
  it('restart-kubelet asks for the restart and touches nothing', async () => {
    expect(await run({ op: 'restart-kubelet', runId: 'r' })).toEqual({
      op: 'restart-kubelet',
      ok: true,
      changed: false,
      restartKubelet: true,
      files: [],
    });
  });

  it('answers a request that does not parse with ok:false', async () => {
    const result = await run({
      op: 'set-flags',
      runId: '../../etc',
      staticPods: [{ path: 'relative.yaml' }],
    });
    expect(result).toMatchObject({ op: 'unknown', ok: false, changed: false });
    expect(result.error).toContain('runId: a run id');
    expect(result.error).toContain('staticPods.0.path');
    expect((await run(undefined)).ok).toBe(false);
  });
});

describe('answers fit the termination message', () => {
  it('cuts the diffs of a large change first, and marks them cut', async () => {
    const many = Object.fromEntries(
      Array.from({ length: 60 }, (_, i) => [`flag-${String(i).padStart(2, '0')}`, 'x'.repeat(60)]),
    );
    const result = await run({
      op: 'set-flags',
      runId: 'big',
      staticPods: [
        { path: KAS, flags: many },
        { path: KCM, flags: many },
      ],
    });
    expect(result.ok).toBe(true);
    expect(Buffer.byteLength(JSON.stringify(result))).toBeLessThanOrEqual(TERMINATION_MESSAGE_LIMIT);
    for (const file of [KAS, KCM]) {
      const report = fileOf(result, file);
      expect(report?.diff).toMatch(/^--- .*\n[\s\S]*\\ cut to fit the termination message\n$/);
      expect(report?.sha256).toHaveLength(64);
      expect(report?.flags).toMatchObject({ 'cloud-provider': 'aws', 'cloud-config': CLOUD_CONF });
    }
  });

  it('then drops flags, then cuts the error', () => {
    const files = Array.from({ length: 25 }, (_, i) => ({
      path: `/etc/kubernetes/manifests/pod-${i}.yaml`,
      exists: true,
      sha256: 'a'.repeat(64),
      flags: { 'cloud-config': '/etc/kubernetes/cloud.conf' },
    }));
    const result: AgentResult = {
      op: 'inspect',
      ok: false,
      changed: false,
      restartKubelet: false,
      files,
      error: 'e'.repeat(5000),
    };
    const fitted = fitResult(result);
    expect(Buffer.byteLength(JSON.stringify(fitted))).toBeLessThanOrEqual(TERMINATION_MESSAGE_LIMIT);
    expect(fitted.files.every((f) => f.flags === undefined && f.sha256 === 'a'.repeat(64))).toBe(true);
    expect(fitted.error?.length).toBeGreaterThan(100);
    const many = fitResult({ ...result, files: [...files, ...files, ...files] });
    expect(many.files).toEqual([]);
    expect(Buffer.byteLength(JSON.stringify(many))).toBeLessThanOrEqual(TERMINATION_MESSAGE_LIMIT);
    expect(many.error?.length).toBeGreaterThan(3000);
    const small: AgentResult = { ...result, files: files.slice(0, 2), error: 'short' };
    expect(fitResult(small)).toBe(small);
  });
});
