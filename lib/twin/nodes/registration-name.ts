/**
 * The name a kubelet registers its Node under, as the twin's kubelet decides it from its own flags
 * (cmd/kubelet/app/server.go: nodeutil.GetHostname, then the cloud's CurrentNodeName when in-tree):
 * - in-tree `aws` names the Node after the instance's private DNS name and `openstack` after the server's
 *   name, both ignoring --hostname-override: the twin's instances are named by their spec Node names;
 * - in-tree `vsphere` takes the host's own name, also ignoring the override;
 * - in-tree `gce` and `azure`, `external` and no provider: --hostname-override, else the host's name,
 *   trimmed and lowercased.
 * So a host whose name is not its Node's keeps that Node only while something pins it: moving it to
 * `external` without --hostname-override registers a second Node, and the first one goes silent.
 */
const NAMED_BY_CLOUD = new Set(['aws', 'openstack']);
const NAMED_BY_HOST = new Set(['vsphere']);

export interface Host {
  /** The Node name the spec gives the host: its instance's name in the cloud. */
  readonly name: string;
  /** What the host calls itself (its UTS name). */
  readonly hostname: string;
}

export function registrationName(host: Host, flags: ReadonlyMap<string, string>): string {
  const provider = flags.get('cloud-provider') ?? '';
  if (NAMED_BY_CLOUD.has(provider)) return host.name;
  const override = NAMED_BY_HOST.has(provider) ? '' : (flags.get('hostname-override') ?? '').trim();
  return (override || host.hostname).trim().toLowerCase();
}
