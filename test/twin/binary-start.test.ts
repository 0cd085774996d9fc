/**
 * The twin's binaries past the minors test/twin/binary-start-real.test.ts can run: the gates locked in
 * 1.31–1.32 and gone from 1.33, the flags dropped in 1.33/1.34, and the kubelet and controller manager.
 */
import { describe, expect, it } from 'vitest';
import { startProblem } from '../../lib/twin/nodes/binary-start.ts';
import { readCommandLine } from '../../lib/twin/nodes/command-line.ts';

const flags = (...words: string[]) => readCommandLine(words).flags;

describe('startProblem', () => {
  it('locks the cloud gates to true in 1.31 and 1.32, and knows them no more from 1.33', () => {
    const off = flags('--cloud-provider=external', '--feature-gates=DisableCloudProviders=false');
    expect(startProblem('kubelet', 31, off)).toMatch(
      /cannot set feature gate DisableCloudProviders to false/,
    );
    expect(
      startProblem('kube-controller-manager', 32, flags('--feature-gates=DisableCloudProviders=true')),
    ).toBeUndefined();
    expect(
      startProblem(
        'kube-apiserver',
        33,
        flags('--feature-gates=DisableKubeletCloudCredentialProviders=true'),
      ),
    ).toBe('unrecognized feature gate: DisableKubeletCloudCredentialProviders');
  });

  it('refuses the cloud flags kube-apiserver dropped in 1.33 and the kubelet --cloud-config dropped in 1.34', () => {
    expect(startProblem('kube-apiserver', 33, flags('--cloud-provider=external'))).toBe(
      'unknown flag: --cloud-provider',
    );
    expect(startProblem('kubelet', 33, flags('--cloud-config=/c'))).toBeUndefined();
    expect(startProblem('kubelet', 34, flags('--cloud-config=/c'))).toBe(
      'failed to parse kubelet flag: unknown flag: --cloud-config',
    );
  });

  it('has the kubelet and controller manager initialise a provider: unknown once removed, disabled by the gate', () => {
    expect(startProblem('kubelet', 26, flags('--cloud-provider=aws'))).toBeUndefined();
    expect(startProblem('kubelet', 27, flags('--cloud-provider=aws'))).toBe(
      'failed to run Kubelet: unknown cloud provider "aws"',
    );
    expect(startProblem('kube-controller-manager', 29, flags('--cloud-provider=azure'))).toMatch(
      /^cloud provider "azure" was specified, but built-in cloud providers are disabled/,
    );
    expect(
      startProblem(
        'kube-controller-manager',
        29,
        flags('--cloud-provider=azure', '--feature-gates=DisableCloudProviders=false'),
      ),
    ).toBeUndefined();
    expect(startProblem('kubelet', 31, flags('--cloud-provider=gce'))).toBe(
      'failed to run Kubelet: unknown cloud provider "gce"',
    );
  });

  it('has the kubelet take a dual-stack --node-ip only without a cloud or, from 1.29, with an external one', () => {
    const pair = '--node-ip=10.0.0.11,fd00::11';
    expect(startProblem('kubelet', 26, flags('--cloud-provider=aws', pair))).toBe(
      'failed to run Kubelet: bad --node-ip "10.0.0.11,fd00::11": dual-stack not supported in this configuration',
    );
    expect(startProblem('kubelet', 28, flags('--cloud-provider=external', pair))).toMatch(
      /dual-stack not supported/,
    );
    expect(startProblem('kubelet', 29, flags('--cloud-provider=external', pair))).toBeUndefined();
    expect(startProblem('kubelet', 26, flags(pair))).toBeUndefined();
    expect(startProblem('kubelet', 30, flags('--node-ip=10.0.0.1,10.0.0.2'))).toMatch(
      /a single IP or a dual-stack pair/,
    );
    // An entry it cannot read is ignored, not refused.
    expect(startProblem('kubelet', 26, flags('--cloud-provider=aws', '--node-ip=bogus'))).toBeUndefined();
  });
});
