import { describe, expect, it } from 'vitest';
import { EXIT } from '../../lib/cli/exit-codes.ts';
import { FIXTURES, fixtureTwins } from '../twin/running-twin.ts';
import { inProcessCli } from './in-process-cli.ts';

const twins = fixtureTwins();
const cli = inProcessCli('workload');

describe('ccm-migrate upgrade|plan --ccm-workload', () => {
  it.each([
    ['upgrade', ['--ccm-workload', 'statefulset'], /Allowed choices are deployment, daemonset/],
    ['plan', ['--ccm-workload', 'DaemonSet'], /Allowed choices are deployment, daemonset/],
    ['downgrade', ['--ccm-workload', 'daemonset'], /unknown option '--ccm-workload'/],
  ] as const)('%s %j: exit 2, nothing written', async (command, extra, message) => {
    const t = await twins(FIXTURES.awsMini);
    await cli.refused(t, command, extra, message);
    const sas = await t.core.listNamespacedServiceAccount({ namespace: 'kube-system' });
    expect(sas.items.map((s) => s.metadata?.name)).not.toContain('cloud-controller-manager');
  });

  it('plans a DaemonSet instead of the Deployment', async () => {
    const t = await twins(FIXTURES.awsMini);
    expect(await cli.run(t, 'plan', '--ccm-workload', 'daemonset')).toBe(EXIT.ok);
    expect(cli.out).toContain('DaemonSet kube-system/aws-cloud-controller-manager');
    expect(cli.out).not.toContain('Deployment kube-system/aws-cloud-controller-manager');
    cli.clear();
    expect(await cli.run(t, 'plan')).toBe(EXIT.ok);
    expect(cli.out).toContain('Deployment kube-system/aws-cloud-controller-manager');
    expect(cli.out).not.toContain('DaemonSet kube-system/aws-cloud-controller-manager');
  });
});
