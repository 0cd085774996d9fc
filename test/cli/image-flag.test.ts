import {
  DescribeExecutionCommand,
  GetExecutionHistoryCommand,
  ListExecutionsCommand,
  SFNClient,
  StartExecutionCommand,
} from '@aws-sdk/client-sfn';
import { mockClient } from 'aws-sdk-client-mock';
import { InvalidArgumentError } from 'commander';
import { beforeEach, describe, expect, it } from 'vitest';
import { EXIT } from '../../lib/cli/exit-codes.ts';
import { collectImage, parseAgentImage } from '../../lib/cli/image-flag.ts';
import { main } from '../../lib/cli/main.ts';
import { AGENT_CONFIGMAP, DEFAULT_AGENT_IMAGE } from '../../lib/kube/agent-job.ts';
import { nodeFiles } from '../e2e/harness.ts';
import { FIXTURES, fixtureTwins, type TestTwin } from '../twin/running-twin.ts';
import { inProcessCli } from './in-process-cli.ts';

const MIRROR = 'mirror.example.internal:5000/provider-aws/cloud-controller-manager:v1.26.6';
const DIGEST = `mirror.example.internal/ccm@sha256:${'ab'.repeat(32)}`;

describe('collectImage (one --image value)', () => {
  it('adds each container to those before it', () => {
    const first = collectImage(`cloud-controller-manager=${MIRROR}`);
    expect(first).toEqual({ 'cloud-controller-manager': MIRROR });
    expect(collectImage(`cloud-node-manager=${DIGEST}`, first)).toEqual({
      'cloud-controller-manager': MIRROR,
      'cloud-node-manager': DIGEST,
    });
    // The same flag twice (a script that repeats itself) is the same override.
    expect(collectImage(`cloud-controller-manager=${MIRROR}`, first)).toEqual(first);
  });

  it.each([
    ['no =', MIRROR, /expected <container>=<image>/],
    ['no container', `=${MIRROR}`, /expected <container>=<image>/],
    ['no image', 'cloud-controller-manager=', /expected <container>=<image>/],
    [
      'an unknown container',
      `aws-ccm=${MIRROR}`,
      /"aws-ccm" is not a container ccm-migrate sets the image of/,
    ],
    ['an image with spaces', 'cloud-controller-manager=mirror/ccm v1', /is not an image reference/],
    ['an upper-case repository', 'cloud-controller-manager=mirror.io/CCM:v1', /is not an image reference/],
    ['a bad digest', 'cloud-controller-manager=mirror.io/ccm@sha256:abc', /is not an image reference/],
    ['no tag or digest', 'cloud-controller-manager=mirror.io/ccm', /names no tag or digest/],
  ])('refuses %s', (_what, value, message) => {
    expect(() => collectImage(value)).toThrow(InvalidArgumentError);
    expect(() => collectImage(value)).toThrow(message);
  });

  it('refuses two images for one container', () => {
    const first = collectImage(`cloud-controller-manager=${MIRROR}`);
    expect(() => collectImage(`cloud-controller-manager=${DIGEST}`, first)).toThrow(
      `cloud-controller-manager is given two images: ${MIRROR} and ${DIGEST}`,
    );
  });
});

const twins = fixtureTwins();
const cli = inProcessCli('image');

/** Nothing of ccm-migrate in the cluster: no agent code, no Job, no CCM. */
async function expectUntouched(t: TestTwin): Promise<void> {
  const configMaps = await t.core.listNamespacedConfigMap({ namespace: 'kube-system' });
  expect(configMaps.items.map((c) => c.metadata?.name)).not.toContain(AGENT_CONFIGMAP);
  expect((await t.batch.listNamespacedJob({ namespace: 'kube-system' })).items).toEqual([]);
  const sas = await t.core.listNamespacedServiceAccount({ namespace: 'kube-system' });
  expect(sas.items.map((s) => s.metadata?.name)).not.toContain('cloud-controller-manager');
}

describe('ccm-migrate upgrade|plan --image, refused', () => {
  it.each([
    ['upgrade', ['--image', 'cloud-controller-manager'], /expected <container>=<image>/],
    ['upgrade', ['--image', `ccm=${MIRROR}`], /"ccm" is not a container ccm-migrate sets the image of/],
    ['plan', ['--image', 'cloud-controller-manager=mirror.io/CCM:v1.26.6'], /is not an image reference/],
    [
      'upgrade',
      ['--provider', 'aws', '--image', `cloud-node-manager=${MIRROR}`],
      /InvalidInput: an image override names "cloud-node-manager", which the AWS cloud-controller-manager does not have \(its containers: cloud-controller-manager\)/,
    ],
    ['downgrade', ['--image', `cloud-controller-manager=${MIRROR}`], /unknown option '--image'/],
  ] as const)('%s %j: exit 2 before anything reaches the cluster', async (command, extra, message) => {
    const t = await twins(FIXTURES.awsMini);
    await cli.refused(t, command, extra, message);
    await expectUntouched(t);
  });

  it('refuses in preflight, exit 2 and no file or object changed, a container the detected provider has not', async () => {
    const t = await twins(FIXTURES.awsMini);
    const before = await nodeFiles(t);
    expect(await cli.run(t, 'upgrade', '--image', `cloud-node-manager=${MIRROR}`)).toBe(EXIT.badInput);
    expect(cli.out).toContain(
      'InvalidInput: an image override names "cloud-node-manager", which the AWS cloud-controller-manager does not have',
    );
    expect(await nodeFiles(t)).toEqual(before);
    const sas = await t.core.listNamespacedServiceAccount({ namespace: 'kube-system' });
    expect(sas.items.map((s) => s.metadata?.name)).not.toContain('cloud-controller-manager');
  });
});

describe('ccm-migrate plan --image', () => {
  it('shows the image each CCM container would run, the override marked', async () => {
    const t = await twins(FIXTURES.awsMini);
    expect(await cli.run(t, 'plan', '--image', `cloud-controller-manager=${MIRROR}`)).toBe(EXIT.ok);
    expect(cli.out).toContain(`  image cloud-controller-manager ${MIRROR} (override)\n`);
    expect(cli.out).toContain(`  agent image ${DEFAULT_AGENT_IMAGE}\n`);
    expect(cli.out).toContain('nothing was changed.');
  });
});

describe('--agent-image', () => {
  it('takes a tag or a digest, and refuses what is not an image reference', () => {
    expect(parseAgentImage('mirror.example.internal/node:22-alpine')).toBe(
      'mirror.example.internal/node:22-alpine',
    );
    expect(parseAgentImage(DIGEST)).toBe(DIGEST);
    expect(() => parseAgentImage('Mirror/Node 22')).toThrow(/"Mirror\/Node 22" is not an image reference/);
  });

  it('is shown by the plan as not pinned when it names no digest', async () => {
    const t = await twins(FIXTURES.awsMini);
    const tagged = 'mirror.example.internal/node:22-alpine';
    expect(await cli.run(t, 'plan', '--agent-image', tagged)).toBe(EXIT.ok);
    expect(cli.out).toContain(`  agent image ${tagged} (not pinned by digest)\n`);
  });
});

describe('ccm-migrate upgrade --aws --image', () => {
  const sfn = mockClient(SFNClient);
  const UPGRADE = 'arn:aws:states:eu-west-1:111111111111:stateMachine:Upgrade';
  const upgrade = (...extra: string[]) =>
    main(['upgrade', '--aws', '--cluster-id', 'c1', '--state-machine-arn', UPGRADE, '--yes', ...extra]);
  beforeEach(() => {
    sfn.reset();
    sfn.on(ListExecutionsCommand).resolves({ executions: [] });
    sfn.on(StartExecutionCommand).resolves({ executionArn: `${UPGRADE}:x`, startDate: new Date() });
    sfn
      .on(DescribeExecutionCommand)
      .resolves({ status: 'SUCCEEDED', startDate: new Date(), stopDate: new Date() });
    sfn.on(GetExecutionHistoryCommand).resolves({ events: [] });
  });

  it('passes the overrides in the execution input', async () => {
    expect(await upgrade('--image', `cloud-controller-manager=${MIRROR}`)).toBe(EXIT.ok);
    const input = sfn.commandCalls(StartExecutionCommand)[0]?.args[0].input.input;
    expect(JSON.parse(input ?? '{}').options).toEqual({ images: { 'cloud-controller-manager': MIRROR } });
  });

  it('starts nothing for a bad one (exit 2)', async () => {
    expect(await upgrade('--image', 'cloud-controller-manager=mirror.io/ccm')).toBe(EXIT.badInput);
    expect(cli.out).toContain('names no tag or digest');
    expect(sfn.commandCalls(StartExecutionCommand)).toEqual([]);
  });
});
