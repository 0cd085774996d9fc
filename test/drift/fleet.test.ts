/**
 * Drift over a fleet, locally: the drift definition run by the local engine over real twins (one clean
 * after an upgrade, one tampered, one unreachable), through `ccm-migrate drift --registry FILE`'s command.
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { fleetDriftCommand } from '../../lib/cli/drift.ts';
import { CliError, EXIT } from '../../lib/cli/exit-codes.ts';
import type { FleetRunResult } from '../../lib/drift/local-fleet.ts';
import { DRIFT_STATES } from '../../state-machines/drift.ts';
import { type E2E, startE2E } from '../e2e/harness.ts';
import { dropCloudFlags, FIXTURES, fixtureSpec, startTestTwin, type TestTwin } from '../twin/running-twin.ts';

const KCM = '/etc/kubernetes/manifests/kube-controller-manager.yaml';

let upgraded: E2E;
let tampered: TestTwin;
let dir: string;
let unreachableKubeconfig: string;

/** A port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'ccm-migrate-fleet-'));
  [upgraded, tampered] = await Promise.all([
    startE2E(await fixtureSpec(FIXTURES.awsMini)),
    // In-tree, but kube-controller-manager no longer runs the cloud loops: nodes would wait tainted.
    startTestTwin(
      await fixtureSpec(FIXTURES.awsMini, { edits: [{ group: 'cp', file: KCM, edit: dropCloudFlags }] }),
    ),
  ]);
  expect((await upgraded.upgrade()).status).toBe('SUCCEEDED');
  // The upgraded twin's kubeconfig, pointed at a port nothing listens on.
  unreachableKubeconfig = path.join(dir, 'gone.kubeconfig');
  const text = await readFile(upgraded.t.twin.kubeconfigPath, 'utf8');
  const server = new URL(upgraded.t.server);
  await writeFile(
    unreachableKubeconfig,
    text.replace(server.origin, `${server.protocol}//127.0.0.1:${await closedPort()}`),
  );
}, 60_000);

afterAll(async () => {
  await Promise.all([upgraded?.stop(), tampered?.stop()]);
  await rm(dir, { recursive: true, force: true });
});

const members = () => ({
  upgraded: {
    clusterId: 'upgraded',
    provider: 'aws',
    desiredMode: 'external',
    kubeconfig: upgraded.t.twin.kubeconfigPath,
  },
  tampered: {
    clusterId: 'tampered',
    provider: 'aws',
    desiredMode: 'in-tree',
    kubeconfig: tampered.twin.kubeconfigPath,
    autoRemediate: true,
    maxUnavailable: 2,
  },
  gone: { clusterId: 'gone', provider: 'aws', desiredMode: 'external', kubeconfig: 'gone.kubeconfig' },
});

/** Run the command over the named members of a fleet file; its output, exit code and run. */
async function fleet(names: (keyof ReturnType<typeof members>)[], opts: { json?: boolean } = {}) {
  const file = path.join(dir, `fleet-${names.join('-')}.yaml`);
  await writeFile(file, stringify({ clusters: names.map((n) => members()[n]) }));
  const { out, text } = capture();
  let exitCode: number = EXIT.ok;
  let run: FleetRunResult | undefined;
  try {
    run = await fleetDriftCommand({
      registry: file,
      deep: false,
      json: opts.json ?? false,
      concurrency: 3,
      out,
      retryIntervalOverrides: { [DRIFT_STATES.check]: 0 },
    });
  } catch (err) {
    if (!(err instanceof CliError)) throw err;
    exitCode = err.exitCode;
  }
  return { text: text(), exitCode, run };
}

/** A stream that keeps what is written to it. */
function capture(): { out: NodeJS.WritableStream; text: () => string } {
  const chunks: string[] = [];
  const out = {
    write: (chunk: string) => {
      chunks.push(chunk);
      return true;
    },
  } as unknown as NodeJS.WritableStream;
  return { out, text: () => chunks.join('') };
}

const writes = (t: TestTwin) => {
  const { byVerb } = t.twin.api.stats();
  return ['create', 'update', 'patch', 'delete'].map((v) => byVerb[v] ?? 0);
};

describe('ccm-migrate drift --registry', () => {
  it('reports clean, drifted and unknown, one line per cluster, exits 10, and writes to no cluster', async () => {
    const before = [writes(upgraded.t), writes(tampered)];

    const { text, exitCode } = await fleet(['upgraded', 'tampered', 'gone']);

    expect(exitCode).toBe(EXIT.drifted);
    expect([writes(upgraded.t), writes(tampered)]).toEqual(before);
    const lines = text.trimEnd().split('\n');
    expect(lines[0]).toBe('upgraded                 clean');
    expect(lines[1]).toBe('tampered                 drifted  1 critical, 0 warning, 0 info');
    expect(lines[2]).toMatch(
      /^ {4}critical control-plane-flags Pod kube-system\/kube-controller-manager-cp-1: expected --cloud-provider=aws; seen no cloud flags$/,
    );
    // Retries spent on a refused connection: unknown, by the error's name.
    expect(lines[3]).toBe('gone                     unknown  ClusterUnreachable');
    expect(lines.slice(4)).toEqual([
      'event DriftDetected for tampered',
      expect.stringMatching(/^remediation requested: downgrade of tampered \(request drift-[0-9a-f]{40}\)$/),
      expect.stringMatching(/^drift run drift-\S+: 3 cluster\(s\), 1 clean, 1 drifted, 1 unknown$/),
    ]);
  });

  it('prints JSON with the events a Lambda would publish, valid against their schemas', async () => {
    const { text, exitCode } = await fleet(['tampered'], { json: true });

    expect(exitCode).toBe(EXIT.drifted);
    const parsed = JSON.parse(text) as { events: Array<{ 'detail-type': string; detail: unknown }> };
    expect(parsed.events.map((e) => [e['detail-type'], e.detail])).toEqual([
      [
        'DriftDetected',
        {
          clusterId: 'tampered',
          findings: [
            expect.stringContaining('control-plane-flags Pod kube-system/kube-controller-manager-cp-1'),
          ],
        },
      ],
      [
        'MigrationRequested',
        expect.objectContaining({ clusterId: 'tampered', kind: 'downgrade', maxUnavailable: 2 }),
      ],
    ]);
  });

  it('exits 4 when a cluster is unknown and none drifted, 0 when all are clean', async () => {
    expect((await fleet(['upgraded', 'gone'])).exitCode).toBe(EXIT.unreachable);
    const clean = await fleet(['upgraded']);
    expect(clean.exitCode).toBe(EXIT.ok);
    expect(clean.run?.summary).toMatchObject({ clusters: 1, clean: 1, drifted: [], unknown: [] });
  });

  it('reports a cluster whose kubeconfig is missing as unknown, saying why', async () => {
    const file = path.join(dir, 'missing.yaml');
    await writeFile(
      file,
      stringify({
        clusters: [
          { clusterId: 'nowhere', provider: 'aws', desiredMode: 'external', kubeconfig: 'no-such-file' },
        ],
      }),
    );
    const { out, text } = capture();
    await expect(
      fleetDriftCommand({ registry: file, deep: false, json: false, concurrency: 1, out }),
    ).rejects.toMatchObject({ exitCode: EXIT.unreachable });
    expect(text()).toContain(
      `nowhere                  unknown  InvalidInput: cannot load kubeconfig ${path.join(dir, 'no-such-file')}: ENOENT`,
    );
  });
});
