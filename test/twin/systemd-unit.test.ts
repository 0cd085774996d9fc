/** How the twin reads a service's command line from a host's unit files, and flags as pflag reads them. */
import { describe, expect, it } from 'vitest';
import { flagIsTrue, gateValue, readCommandLine } from '../../lib/twin/nodes/command-line.ts';
import { serviceCommand } from '../../lib/twin/nodes/systemd-unit.ts';

const KUBEADM_DROP_IN = `[Service]
Environment="KUBELET_KUBECONFIG_ARGS=--bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf --kubeconfig=/etc/kubernetes/kubelet.conf"
Environment="KUBELET_CONFIG_ARGS=--config=/var/lib/kubelet/config.yaml"
EnvironmentFile=-/var/lib/kubelet/kubeadm-flags.env
EnvironmentFile=-/etc/default/kubelet
ExecStart=
ExecStart=/usr/bin/kubelet $KUBELET_KUBECONFIG_ARGS $KUBELET_CONFIG_ARGS $KUBELET_KUBEADM_ARGS $KUBELET_EXTRA_ARGS
`;
const PACKAGE_UNIT = '[Service]\nExecStart=/usr/bin/kubelet\n';

function host(files: Record<string, string>) {
  const read = (p: string) => files[p];
  const list = (dir: string) =>
    Object.keys(files)
      .filter((p) => p.startsWith(`${dir}/`) && !p.slice(dir.length + 1).includes('/'))
      .map((p) => p.slice(dir.length + 1));
  return serviceCommand('kubelet.service', read, list, PACKAGE_UNIT);
}

describe('serviceCommand', () => {
  it('assembles kubeadm’s drop-in: Environment=, environment files (later win), $VAR split into words', () => {
    const cmd = host({
      '/usr/lib/systemd/system/kubelet.service.d/10-kubeadm.conf': KUBEADM_DROP_IN,
      '/var/lib/kubelet/kubeadm-flags.env':
        'KUBELET_KUBEADM_ARGS="--cloud-provider=aws  --node-ip=10.0.0.1"\n',
      '/etc/default/kubelet': '# extra\nKUBELET_EXTRA_ARGS=--v=2\n',
    });
    expect(cmd.argv).toEqual([
      '/usr/bin/kubelet',
      '--bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf',
      '--kubeconfig=/etc/kubernetes/kubelet.conf',
      '--config=/var/lib/kubelet/config.yaml',
      '--cloud-provider=aws',
      '--node-ip=10.0.0.1',
      '--v=2',
    ]);
    expect(cmd.sources).toEqual([
      '/usr/lib/systemd/system/kubelet.service.d/10-kubeadm.conf',
      '/var/lib/kubelet/kubeadm-flags.env',
      '/etc/default/kubelet',
    ]);
  });

  it('takes the last ExecStart of the drop-ins in name order, /etc hiding a same-named drop-in of /usr/lib', () => {
    const cmd = host({
      '/usr/lib/systemd/system/kubelet.service.d/10-kubeadm.conf': KUBEADM_DROP_IN,
      '/usr/lib/systemd/system/kubelet.service.d/20-cloud.conf':
        '[Service]\nExecStart=\nExecStart=/usr/bin/kubelet --cloud-provider=gce\n',
      '/etc/systemd/system/kubelet.service.d/20-cloud.conf':
        '[Service]\nExecStart=\nExecStart=/usr/bin/kubelet $KUBELET_KUBEADM_ARGS --cloud-provider=aws\n',
      '/var/lib/kubelet/kubeadm-flags.env': 'KUBELET_KUBEADM_ARGS="--cloud-provider=external"\n',
    });
    expect(cmd.argv).toEqual(['/usr/bin/kubelet', '--cloud-provider=external', '--cloud-provider=aws']);
    expect(readCommandLine(cmd.argv.slice(1)).flags.get('cloud-provider')).toBe('aws');
  });

  it('gives an environment file’s value over Environment=’s, keeps a braced variable one word, and strips ExecStart prefixes', () => {
    const cmd = host({
      '/etc/systemd/system/kubelet.service':
        '[Unit]\nDescription=x\n[Service]\nEnvironment=A=from-unit "B=two words"\nEnvironmentFile=/etc/kubelet.env\nExecStart=-/usr/local/bin/kubelet $A $' +
        '{B} \\\n  --x=1\n',
      '/etc/kubelet.env': "A='from file'\n",
    });
    expect(cmd.argv).toEqual(['/usr/local/bin/kubelet', 'from', 'file', 'two words', '--x=1']);
  });

  it('says why systemd would not start it: a missing environment file without `-`, no ExecStart', () => {
    expect(
      host({ '/etc/systemd/system/kubelet.service': '[Service]\nEnvironmentFile=/nope\nExecStart=/k\n' })
        .problem,
    ).toBe('kubelet.service: Failed to load environment files: /nope');
    expect(
      host({ '/etc/systemd/system/kubelet.service': '[Service]\nExecStart=/k\nExecStart=\n' }).problem,
    ).toBe('kubelet.service has no ExecStart= setting');
    expect(host({}).argv).toEqual(['/usr/bin/kubelet']);
  });
});

describe('readCommandLine', () => {
  it('reads --a=b, --a b, a boolean alone, later values winning and --feature-gates merged gate by gate', () => {
    const { flags, args } = readCommandLine([
      '--hostname-override',
      'Node-1',
      '--leader-elect',
      '--feature-gates=A=true,B=false',
      '--cloud-provider=aws',
      '--feature-gates=B=true',
      '--cloud-provider=external',
      'stray',
    ]);
    expect(Object.fromEntries(flags)).toEqual({
      'hostname-override': 'Node-1',
      'leader-elect': 'true',
      'feature-gates': 'A=true,B=true',
      'cloud-provider': 'external',
    });
    expect(args).toEqual(['stray']);
    expect(gateValue(flags, 'B')).toBe(true);
    expect(gateValue(flags, 'C')).toBeUndefined();
    expect(flagIsTrue(flags, 'leader-elect', false)).toBe(true);
    expect(flagIsTrue(readCommandLine(['--leader-elect=false']).flags, 'leader-elect', true)).toBe(false);
  });
});
