/**
 * The twin kubelet's --config-dir (KEP-3983; cmd/kubelet/app/server.go, mergeKubeletConfigurations in
 * v1.28–v1.30): `*.conf` KubeletConfiguration drop-ins merged over --config in file-name order, flags over
 * both gate by gate; 1.28–1.29 start only with KUBELET_CONFIG_DROPIN_DIR_ALPHA in the environment.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { hostPath } from '../../lib/twin/context.ts';
import { startProblem } from '../../lib/twin/nodes/binary-start.ts';
import { readKubeletStartConfig } from '../../lib/twin/nodes/kubelet-config.ts';

const UNIT = `[Service]
Environment="KUBELET_CONFIG_ARGS=--config=/var/lib/kubelet/config.yaml"
EnvironmentFile=-/var/lib/kubelet/kubeadm-flags.env
EnvironmentFile=-/etc/default/kubelet
ExecStart=
ExecStart=/usr/bin/kubelet $KUBELET_CONFIG_ARGS $KUBELET_KUBEADM_ARGS $KUBELET_EXTRA_ARGS
`;
const ALPHA = '[Service]\nEnvironment="KUBELET_CONFIG_DROPIN_DIR_ALPHA="\n';
const DIR = '/etc/kubernetes/kubelet.conf.d';
const config = (body: string): string =>
  `apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n${body}`;

let stateDir: string | undefined;
afterEach(() => {
  if (stateDir) rmSync(stateDir, { recursive: true, force: true });
  stateDir = undefined;
});

/** A host `n1` with kubeadm's unit, a config file, flags with --config-dir, and these extra files. */
function host(files: Record<string, string>): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'kubelet-drop-ins-'));
  stateDir = dir;
  const all: Record<string, string> = {
    '/usr/lib/systemd/system/kubelet.service.d/10-kubeadm.conf': UNIT,
    '/var/lib/kubelet/config.yaml': config(
      'staticPodPath: /etc/kubernetes/manifests\nfeatureGates:\n  GracefulNodeShutdown: false\n',
    ),
    '/var/lib/kubelet/kubeadm-flags.env': `KUBELET_KUBEADM_ARGS="--cloud-provider=external --feature-gates=DisableCloudProviders=false"\n`,
    '/etc/default/kubelet': `KUBELET_EXTRA_ARGS=--config-dir=${DIR}\n`,
    ...files,
  };
  for (const [file, text] of Object.entries(all)) {
    const at = hostPath(dir, 'n1', file);
    mkdirSync(path.dirname(at), { recursive: true });
    writeFileSync(at, text);
  }
  return dir;
}

const gatesOf = (flags: ReadonlyMap<string, string>): Record<string, string> =>
  Object.fromEntries((flags.get('feature-gates') ?? '').split(',').map((g) => g.split('=')));

describe('the twin kubelet’s --config-dir drop-ins', () => {
  it('merges *.conf files in name order (subdirectories too) over --config, the flags over both', () => {
    const dir = host({
      '/etc/systemd/system/kubelet.service.d/20-alpha.conf': ALPHA,
      [`${DIR}/20-later.conf`]: config('featureGates:\n  GracefulNodeShutdown: true\n'),
      [`${DIR}/10-gates.conf`]: config(
        'staticPodPath: /etc/kubernetes/other\nfeatureGates:\n  DisableCloudProviders: true\n  GracefulNodeShutdown: false\n  KubeletTracing: true\n',
      ),
      [`${DIR}/15-sub/static.conf`]: config('staticPodPath: /etc/kubernetes/static\n'),
      [`${DIR}/99-ignored.yaml`]: config('staticPodPath: /nowhere\n'),
    });
    const start = readKubeletStartConfig(dir, 'n1', 29);
    expect(start.problem).toBeUndefined();
    expect(start.staticPodPath).toBe('/etc/kubernetes/static');
    // The drop-ins' gates over the config's, gate by gate; the flags' DisableCloudProviders over both.
    expect(gatesOf(start.flags)).toEqual({
      GracefulNodeShutdown: 'true',
      KubeletTracing: 'true',
      DisableCloudProviders: 'false',
    });
  });

  it('does not start 1.28–1.29 without KUBELET_CONFIG_DROPIN_DIR_ALPHA; 1.30 needs none', () => {
    const dir = host({ [`${DIR}/10-gates.conf`]: config('featureGates:\n  KubeletTracing: true\n') });
    expect(readKubeletStartConfig(dir, 'n1', 29).problem).toBe(
      `flag ${DIR} specified but environment variable KUBELET_CONFIG_DROPIN_DIR_ALPHA not set, cannot start kubelet`,
    );
    const beta = readKubeletStartConfig(dir, 'n1', 30);
    expect(beta.problem).toBeUndefined();
    expect(gatesOf(beta.flags).KubeletTracing).toBe('true');
  });

  it('exits naming a drop-in it cannot load, and a directory that is not there', () => {
    const bad = host({ [`${DIR}/10-bad.conf`]: 'featureGates: {}\n' });
    expect(readKubeletStartConfig(bad, 'n1', 30).problem).toBe(
      `failed to merge kubelet configs: failed to walk through kubelet dropin directory "${DIR}": ` +
        `failed to load kubelet dropin file, path: ${DIR}/10-bad.conf, error: the file is not a KubeletConfiguration`,
    );
    const missing = host({});
    expect(readKubeletStartConfig(missing, 'n1', 30).problem).toMatch(
      /failed to walk through kubelet dropin directory .*: lstat .*: no such file or directory/,
    );
  });

  it('is an unknown flag before 1.28', () => {
    const dir = host({});
    const start = readKubeletStartConfig(dir, 'n1', 27);
    expect(start.problem).toBeUndefined();
    expect(startProblem('kubelet', 27, start.flags)).toBe(
      'failed to parse kubelet flag: unknown flag: --config-dir',
    );
  });
});
