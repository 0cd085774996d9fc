import { describe, expect, it } from 'vitest';
import {
  cloudFlagProblem,
  featureGate,
  IN_TREE_PROVIDERS,
  isInTreeProvider,
  kubernetesMinor,
} from '../../lib/controlplane/cloud-flag-rules.ts';
import { parseFlags } from '../../lib/controlplane/flags.ts';

const flags = (...args: string[]) => parseFlags(args);
const DISABLED =
  'was specified, but built-in cloud providers are disabled. Please set --cloud-provider=external and migrate to an external cloud provider';

describe('in-tree providers', () => {
  it('knows the five in-tree names; external, empty and out-of-tree names are not in-tree', () => {
    expect([...IN_TREE_PROVIDERS].sort()).toEqual(['aws', 'azure', 'gce', 'openstack', 'vsphere']);
    for (const name of ['external', '', 'ibm', 'AWS']) expect(isInTreeProvider(name)).toBe(false);
  });

  it('reads minors and feature gates', () => {
    expect(kubernetesMinor('v1.27.16')).toBe(27);
    expect(kubernetesMinor('1.30.0')).toBe(30);
    expect(() => kubernetesMinor('2.0.0')).toThrow();
    const f = flags('--feature-gates=A=true, DisableCloudProviders=false,B');
    expect(featureGate(f, 'DisableCloudProviders')).toBe(false);
    expect(featureGate(f, 'A')).toBe(true);
    expect(featureGate(f, 'B')).toBeUndefined();
  });
});

describe('cloudFlagProblem', () => {
  it('accepts no provider and external on every version', () => {
    for (const v of ['v1.26.0', 'v1.29.0', 'v1.32.0']) {
      for (const c of ['kube-apiserver', 'kube-controller-manager', 'kubelet'] as const) {
        expect(cloudFlagProblem(c, v, flags())).toBeUndefined();
        expect(cloudFlagProblem(c, v, flags('--cloud-provider=external'))).toBeUndefined();
      }
    }
  });

  it('accepts each in-tree provider up to the release before its removal', () => {
    expect(
      cloudFlagProblem('kube-controller-manager', 'v1.25.9', flags('--cloud-provider=openstack')),
    ).toBeUndefined();
    expect(cloudFlagProblem('kubelet', 'v1.26.15', flags('--cloud-provider=aws'))).toBeUndefined();
    expect(cloudFlagProblem('kube-apiserver', 'v1.28.3', flags('--cloud-provider=azure'))).toBeUndefined();
  });

  it('refuses a removed provider with the error of each binary', () => {
    expect(cloudFlagProblem('kube-controller-manager', 'v1.27.0', flags('--cloud-provider=aws'))).toBe(
      'cloud provider could not be initialized: unknown cloud provider "aws"',
    );
    expect(cloudFlagProblem('kubelet', 'v1.26.0', flags('--cloud-provider=openstack'))).toBe(
      'failed to run Kubelet: unknown cloud provider "openstack"',
    );
    expect(cloudFlagProblem('kube-apiserver', 'v1.30.1', flags('--cloud-provider=vsphere'))).toBe(
      'unknown --cloud-provider: vsphere',
    );
    expect(cloudFlagProblem('kube-controller-manager', 'v1.31.0', flags('--cloud-provider=gce'))).toMatch(
      /unknown cloud provider "gce"/,
    );
    expect(cloudFlagProblem('kubelet', 'v1.26.0', flags('--cloud-provider=nope'))).toMatch(
      /unknown cloud provider "nope"/,
    );
  });

  it('on 1.29 and 1.30 refuses an in-tree provider unless DisableCloudProviders=false', () => {
    expect(cloudFlagProblem('kube-controller-manager', 'v1.29.4', flags('--cloud-provider=gce'))).toBe(
      `cloud provider "gce" ${DISABLED}`,
    );
    expect(cloudFlagProblem('kubelet', 'v1.30.0', flags('--cloud-provider=gce'))).toBe(
      `failed to run Kubelet: failed to create kubelet: cloud provider "gce" ${DISABLED}`,
    );
    expect(cloudFlagProblem('kube-apiserver', 'v1.29.0', flags('--cloud-provider=azure'))).toBe(
      "when using --cloud-provider set to 'azure', please set DisableCloudProviders feature to false",
    );
    const gateOff = flags('--cloud-provider=gce', '--feature-gates=DisableCloudProviders=false');
    expect(cloudFlagProblem('kube-controller-manager', 'v1.30.2', gateOff)).toBeUndefined();
    expect(cloudFlagProblem('kubelet', 'v1.29.0', gateOff)).toBeUndefined();
    const gateOn = flags('--cloud-provider=aws', '--feature-gates=DisableCloudProviders=true');
    expect(cloudFlagProblem('kube-controller-manager', 'v1.26.0', gateOn)).toBe(
      `cloud provider "aws" ${DISABLED}`,
    );
  });

  it('from 1.31 refuses the gates set to false even with an external provider: they are locked to true', () => {
    const leftover = flags(
      '--cloud-provider=external',
      '--feature-gates=DisableCloudProviders=false,Foo=true',
    );
    expect(cloudFlagProblem('kubelet', 'v1.30.9', leftover)).toBeUndefined();
    expect(cloudFlagProblem('kubelet', 'v1.31.0', leftover)).toMatch(
      /cannot set feature gate DisableCloudProviders to false, feature is locked to true/,
    );
    const credentials = flags('--feature-gates=DisableKubeletCloudCredentialProviders=false');
    expect(cloudFlagProblem('kube-controller-manager', 'v1.32.1', credentials)).toMatch(
      /DisableKubeletCloudCredentialProviders to false/,
    );
    expect(
      cloudFlagProblem('kubelet', 'v1.31.0', flags('--feature-gates=DisableCloudProviders=true')),
    ).toBeUndefined();
  });

  it('refuses the cloud flags kube-apiserver dropped in 1.33 and the kubelet --cloud-config dropped in 1.34', () => {
    expect(
      cloudFlagProblem('kube-apiserver', 'v1.33.0', flags('--cloud-config=/x', '--cloud-provider=external')),
    ).toBe('unknown flag: --cloud-config');
    expect(cloudFlagProblem('kube-apiserver', 'v1.32.5', flags('--cloud-provider=external'))).toBeUndefined();
    expect(
      cloudFlagProblem('kubelet', 'v1.34.0', flags('--cloud-provider=external', '--cloud-config=/x')),
    ).toBe('failed to parse kubelet flag: unknown flag: --cloud-config');
    expect(
      cloudFlagProblem('kubelet', 'v1.33.0', flags('--cloud-provider=external', '--cloud-config=/x')),
    ).toBeUndefined();
    expect(
      cloudFlagProblem(
        'kube-controller-manager',
        'v1.34.0',
        flags('--cloud-provider=external', '--cloud-config=/x'),
      ),
    ).toBeUndefined();
  });
});
