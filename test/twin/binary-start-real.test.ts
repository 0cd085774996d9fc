/**
 * The twin's model of which cloud flags a kube-apiserver starts with, and the product's rules, held to the
 * real binaries (one per twin spec's minor, as `npm run setup:kube` builds them). Each case runs the
 * binary with the flags and a `--secure-port=0` it always refuses, so it stops right after validating its
 * options: its error list is the port's error plus whatever it says of the cloud flags.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import pLimit from 'p-limit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cloudFlagProblem } from '../../lib/controlplane/cloud-flag-rules.ts';
import { startErrors } from '../../lib/twin/nodes/binary-start.ts';
import { readCommandLine } from '../../lib/twin/nodes/command-line.ts';
import { apiServerPath, twinSpecVersions } from '../../lib/twin/real/binaries.ts';
import { kubernetesMinor } from '../../lib/twin/workloads/objects.ts';
import { realApiRuns } from '../real-api.ts';

const PORT_ERROR = '--secure-port 0 must be between 1 and 65535, inclusive. It cannot be turned off with 0';
const PROVIDERS = ['', 'external', 'aws', 'gce', 'azure', 'openstack', 'no-such-cloud'];
const GATES = [
  '',
  'DisableCloudProviders=false',
  'DisableCloudProviders=false,DisableKubeletCloudCredentialProviders=false',
  'DisableKubeletCloudCredentialProviders=false',
];
const CASES = PROVIDERS.flatMap((provider) => GATES.map((gates) => ({ provider, gates })));

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'ccm-migrate-kas-flags-'));
  await promisify(execFile)('openssl', ['genrsa', '-out', path.join(dir, 'sa.key'), '2048']);
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** What the real binary says of these flags: the err of its "command failed" line. */
async function realError(version: string, flags: readonly string[]): Promise<string> {
  const key = path.join(dir, 'sa.key');
  const args = [
    ...flags,
    '--etcd-servers=http://127.0.0.1:1',
    '--service-account-issuer=https://kubernetes.default.svc',
    `--service-account-key-file=${key}`,
    `--service-account-signing-key-file=${key}`,
    '--secure-port=0',
  ];
  const out = await promisify(execFile)(apiServerPath(version), args, { timeout: 30_000 }).then(
    () => ({ stderr: '' }),
    (err: { stderr?: string }) => ({ stderr: err.stderr ?? '' }),
  );
  const line = out.stderr.split('\n').find((l) => l.includes('"command failed"')) ?? out.stderr;
  return /err="(.*)"$/.exec(line)?.[1]?.replace(/\\"/g, '"') ?? line;
}

describe.runIf(realApiRuns())(
  'kube-apiserver’s cloud flags, the twin and the product against the binary',
  () => {
    it.each(twinSpecVersions())('%s', async (version) => {
      const minor = kubernetesMinor(version);
      const limit = pLimit(4);
      const results = await Promise.all(
        CASES.map(({ provider, gates }) =>
          limit(async () => {
            const flags = [
              ...(provider ? [`--cloud-provider=${provider}`] : []),
              ...(gates ? [`--feature-gates=${gates}`] : []),
            ];
            const parsed = readCommandLine(flags).flags;
            const twin = [PORT_ERROR, ...startErrors('kube-apiserver', minor, parsed)];
            return {
              flags: flags.join(' ') || '(none)',
              real: await realError(version, flags),
              twin: twin.length > 1 ? `[${twin.join(', ')}]` : PORT_ERROR,
              productRefuses: cloudFlagProblem('kube-apiserver', version, parsed) !== undefined,
            };
          }),
        ),
      );
      const differences = results.filter((r) => r.real !== r.twin);
      expect(differences, 'the twin’s errors differ from the binary’s').toEqual([]);
      const productDiffers = results.filter((r) => r.productRefuses !== (r.real !== PORT_ERROR));
      expect(productDiffers, 'the product’s rules differ from the binary').toEqual([]);
    });
  },
);
