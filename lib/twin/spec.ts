/**
 * The twin spec: a YAML description of a simulated cluster (nodes, versions, cloud, node files, latencies,
 * faults). Validated here; every error names the field path. A user can write one from a real cluster and
 * rehearse a migration on it.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { parse as parseYaml } from 'yaml';
import * as z from 'zod';

export const PROVIDERS = ['aws', 'azure', 'gce', 'vsphere', 'openstack', 'ibm'] as const;
export const ProviderSchema = z.enum(PROVIDERS);
export type Provider = z.infer<typeof ProviderSchema>;

/** `2s`, `500ms`, `1m`, or a number of milliseconds. */
export const DurationSchema = z
  .union([
    z.number().nonnegative(),
    z.string().regex(/^\d+(\.\d+)?(ms|s|m)$/, 'expected a duration such as 500ms, 2s or 1m'),
  ])
  .transform((v) => {
    if (typeof v === 'number') return v;
    const m = /^(\d+(?:\.\d+)?)(ms|s|m)$/.exec(v) as RegExpExecArray;
    const factor = m[2] === 'ms' ? 1 : m[2] === 's' ? 1000 : 60_000;
    return Math.round(Number(m[1]) * factor);
  });

const KubernetesVersionSchema = z
  .string()
  .regex(/^v?1\.\d+\.\d+$/, 'expected a Kubernetes version such as v1.26.15')
  .transform((v) => (v.startsWith('v') ? v : `v${v}`));

const NODE_NAME = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/;
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

/** A DNS-1123 label (cluster and group names: a group name prefixes its node names). */
const LabelNameSchema = z
  .string()
  .max(63)
  .regex(DNS_LABEL, 'must be a DNS label (lower-case a-z, 0-9 and -)');

/**
 * Node names are DNS-1123 subdomains of at most 253 characters, like real Node objects
 * (https://kubernetes.io/docs/concepts/overview/working-with-objects/names/#dns-subdomain-names).
 */
const NodeNameSchema = z.string().max(253).regex(NODE_NAME, 'must be a DNS subdomain');

/**
 * The kubelet's static pod directory on kubeadm hosts (`staticPodPath` in /var/lib/kubelet/config.yaml).
 * https://kubernetes.io/docs/tasks/configure-pod-container/static-pod/
 */
export const STATIC_POD_DIR = '/etc/kubernetes/manifests';

/**
 * Why a host file path is refused, if it is: it must be absolute, name a file (no trailing slash), and
 * have no `.`/`..` segments, which would let a spec write outside the node's directory.
 */
function hostPathProblem(p: string): string | undefined {
  if (!p.startsWith('/') || p.includes('\0')) return 'file paths must be absolute';
  if (p.endsWith('/')) return 'a file path must name a file, not a directory';
  if (p.split('/').some((segment) => segment === '.' || segment === '..')) {
    return 'file paths must not contain . or .. segments';
  }
  return undefined;
}

/**
 * File contents. In a spec file a value may also be `{ file: relative/path }`, which loadTwinSpec replaces
 * with that file's contents (relative to the spec), so real files copied from a node are kept once.
 */
const FileContentsSchema = z.string({
  error: (issue) =>
    isFileRef(issue.input)
      ? 'a { file: … } reference is resolved only when the spec is loaded from its file (loadTwinSpec)'
      : 'expected the file contents as a string, or { file: path relative to the spec }',
});

/** Every latency the twin models, in ms. */
const LatencyFiguresSchema = z
  .object({
    /** From a changed static pod manifest to the new mirror pod being Ready. */
    staticPodRestart: DurationSchema,
    /** From a kubelet restart to the node being Ready again. */
    kubeletRestart: DurationSchema,
    /** From a workload pod being created to it being Ready. */
    podStart: DurationSchema,
    /** How long a cloud controller takes to initialise one node. */
    nodeInit: DurationSchema,
    /** How often each kubelet looks at its static pod directory (the real file source polls every 20 s). */
    fileCheck: DurationSchema,
    /** Added to every API request. */
    apiRequest: DurationSchema,
    /** How long a node agent Job's pod takes to run (start, image present) before the agent itself. */
    jobStart: DurationSchema,
    /** Added to the first agent pod on a node whose status does not list the agent's image yet: its pull. */
    agentImagePull: DurationSchema,
    /** Lease duration of KCM/CCM leader election. */
    leaseDuration: DurationSchema,
  })
  .strict();
type LatencyFigures = z.infer<typeof LatencyFiguresSchema>;

/**
 * Named sets of latencies (`latencies: { profile: realistic }`, any figure given beside it wins).
 * - `short` (the default): a demo's and the tests' figures, far below a real cluster's, so that a run takes
 *   seconds.
 * - `realistic`: a real cluster's, each from a published measurement, SLO or default; where none gives the
 *   figure, an estimate and what it rests on. Runs take minutes of wall-clock time at these figures.
 */
export const LATENCY_PROFILES = {
  short: {
    staticPodRestart: 2000,
    kubeletRestart: 1000,
    podStart: 500,
    nodeInit: 200,
    fileCheck: 100,
    apiRequest: 0,
    jobStart: 100,
    agentImagePull: 0,
    leaseDuration: 15_000,
  },
  realistic: {
    // kubeadm's static pods (cmd/kubeadm/app/util/staticpod/utils.go, the manifests under
    // assets/twins/hosts/): a startupProbe with initialDelaySeconds 10 and periodSeconds 10, so a restarted
    // kube-apiserver or kube-controller-manager is Ready 10 s after its container starts at the earliest,
    // and 20 s when it is not healthy yet at the first probe (a kube-apiserver's post-start hooks and
    // cache sync take seconds). Estimate: the second probe, 20 s.
    staticPodRestart: 20_000,
    // Node Ready after `systemctl restart kubelet`: the kubelet posts its status at once when it starts
    // (fastStatusUpdateOnce) and then every nodeStatusUpdateFrequency (10 s default, KubeletConfiguration).
    // Estimate: one status period, 10 s (the container runtime and the network stay up across the restart).
    kubeletRestart: 10_000,
    // Kubernetes' pod startup SLO (kubernetes/community sig-scalability/slos/pod_startup_latency.md): a
    // stateless pod with its image present starts within 5 s at the 99th percentile.
    podStart: 5000,
    // The agent's pod is such a pod (image present): the same SLO.
    jobStart: 5000,
    // The agent image (node:22-alpine, ≈ 50 MB compressed) from ECR Public on a node's first agent pod.
    // Estimate: 5 s at a few tens of MB/s with unpacking (the SLO above leaves pulls out).
    agentImagePull: 5000,
    // The CCM's cloud-node controller initialises a tainted node on its update event: one instance lookup
    // (EC2 DescribeInstances and the like, hundreds of ms) and a Node patch. Estimate: 1 s.
    nodeInit: 1000,
    // KubeletConfiguration fileCheckFrequency: 20 s. The kubelet's file source also watches the manifest
    // directory (inotify), which the twin models by waking a node's kubelet when the agent writes a file.
    fileCheck: 20_000,
    // Not modelled: requests inside a region take milliseconds.
    apiRequest: 0,
    // k8s.io/component-base/config/v1alpha1 RecommendedDefaultLeaderElectionConfiguration: a 15 s lease
    // (10 s renew deadline, 2 s retry period), what kube-controller-manager and the CCMs run with.
    leaseDuration: 15_000,
  },
} satisfies Record<string, LatencyFigures>;
export type LatencyProfile = keyof typeof LATENCY_PROFILES;
const PROFILE_NAMES = Object.keys(LATENCY_PROFILES) as [LatencyProfile, ...LatencyProfile[]];

/** A profile's figures, with any figure given beside it in its place. */
export const LatenciesSchema = LatencyFiguresSchema.partial()
  .extend({
    profile: z.enum(PROFILE_NAMES).default('short'),
  })
  .strict()
  .transform(({ profile, ...given }): LatencyFigures & { profile: LatencyProfile } => ({
    profile,
    ...LATENCY_PROFILES[profile],
    ...Object.fromEntries(Object.entries(given).filter(([, v]) => v !== undefined)),
  }));
export type Latencies = z.infer<typeof LatenciesSchema>;

export const NodeGroupSchema = z
  .object({
    /** Nodes are named `<name>-1` … `<name>-<count>` unless `names` is given. */
    name: LabelNameSchema,
    count: z.number().int().min(0).max(20_000).default(1),
    /** Explicit node names, instead of `<name>-<i>`; their number is the count. */
    names: z.array(NodeNameSchema).optional(),
    role: z.enum(['control-plane', 'worker']),
    /**
     * Each host's hostname, which need not be its Node's name (an AWS host named `ip-10-0-1-12` whose
     * Node is `ip-10-0-1-12.ec2.internal`, a `--hostname-override`, capitals): `{name}` stands for the node
     * name, `{ip-dashed}` for its IP with dashes. The hostname is what a host-network process calls itself,
     * in a leader election identity among others. @default `{name}`
     */
    hostname: z.string().min(1).default('{name}'),
    labels: z.record(z.string(), z.string()).default({}),
    /**
     * The CSI drivers whose node plugin runs on each host of the group (`ebs.csi.aws.com`): each kubelet
     * lists them in its Node's CSINode, as a registered node plugin has its kubelet do.
     */
    csiDrivers: z.array(z.string().min(1)).default([]),
    /**
     * Taints each node has besides those its kubelet registers with (--register-with-taints, kubeadm's
     * control-plane taint, the uninitialized taint): an operator's, kept by `twin snapshot`.
     */
    taints: z
      .array(
        z
          .object({
            key: z.string().min(1),
            value: z.string().optional(),
            effect: z.enum(['NoSchedule', 'PreferNoSchedule', 'NoExecute']),
          })
          .strict(),
      )
      .default([]),
    /**
     * A second network interface on each instance: the cloud's instance API lists its address as another
     * InternalIP, after the first (what a cloud-controller-manager reads). `inTree: false` hides it from an
     * in-tree kubelet, whose provider asked the instance's own metadata: in-tree Azure read only the first
     * interface there (legacy-cloud-providers azure getLocalInstanceNodeAddresses), where AWS's read every
     * one. Its address is the node's IP with 10.1 in place of 10.0.
     */
    secondNic: z
      .object({ inTree: z.boolean().default(true) })
      .strict()
      .optional(),
    /**
     * Files of each host, by absolute path; see renderHostFile for the per-node placeholders.
     * Control-plane nodes hold the static pod manifests under /etc/kubernetes/manifests.
     */
    files: z
      .record(z.string(), FileContentsSchema)
      // Checked here rather than as the record's key schema, whose errors only say "Invalid key in record".
      .superRefine((files, ctx) => {
        for (const file of Object.keys(files)) {
          const message = hostPathProblem(file);
          if (message) ctx.addIssue({ code: 'custom', path: [file], message });
        }
      })
      .default({}),
  })
  .strict();
export type NodeGroup = z.infer<typeof NodeGroupSchema>;

/** A node's instance as the cloud reports it (see CloudSchema.instances). */
export const InstanceSchema = z
  .object({
    /** Its first InternalIP: also what `{{nodeIP}}` stands for in its host files. */
    ip: z.ipv4(),
    /** Absent: derived as for any twin node (a node that no cloud controller initialised yet). */
    providerID: z.string().min(1).optional(),
    zone: z.string().min(1).optional(),
    instanceType: z.string().min(1).optional(),
  })
  .strict();
export type InstanceSpec = z.infer<typeof InstanceSchema>;

export const CloudSchema = z
  .object({
    provider: ProviderSchema,
    region: z.string().min(1),
    zones: z
      .array(z.string().min(1))
      .min(1)
      .refine((zones) => new Set(zones).size === zones.length, 'zones must be unique'),
    /** Cloud account/project/subscription the providerIDs name. */
    project: z.string().default('ccm-migrate-twin'),
    /** Nodes whose instance the cloud does not know (an identity mismatch a CCM would delete them for). */
    missingInstances: z.array(z.string()).default([]),
    /**
     * Instances by node name as a real cloud has them, instead of the ones the twin derives from the spec
     * (`twin snapshot` writes them, so that a twin of a real cluster has its nodes' addresses, zones and
     * providerIDs). A node not listed gets derived ones.
     */
    instances: z.record(z.string(), InstanceSchema).default({}),
  })
  .strict();
export type Cloud = z.infer<typeof CloudSchema>;

const VERBS = ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'] as const;

export const FaultSchema = z.discriminatedUnion('kind', [
  z
    .object({
      kind: z.literal('error'),
      /** Fraction of matching requests that fail, 0–1. */
      rate: z.number().min(0).max(1),
      code: z.union([z.literal(429), z.literal(500), z.literal(503)]),
      verb: z.enum(VERBS).optional(),
      /** Resource plural (`nodes`, `deployments`); every resource when absent. */
      resource: z.string().optional(),
    })
    .strict(),
  z
    .object({
      kind: z.literal('latency'),
      extra: DurationSchema,
      verb: z.enum(VERBS).optional(),
      resource: z.string().optional(),
    })
    .strict(),
  z
    .object({
      kind: z.literal('reset'),
      rate: z.number().min(0).max(1),
      verb: z.enum(VERBS).optional(),
      resource: z.string().optional(),
    })
    .strict(),
  z
    .object({
      /**
       * Someone else writes the object just before a matching update or patch reaches it (an annotation
       * changes, so its resourceVersion moves on): the request meets a real conflict, a 409 for an update
       * carrying the version it read, a failed `test` for a JSON patch guarded by it.
       */
      kind: z.literal('concurrentWrite'),
      rate: z.number().min(0).max(1),
      /** At most this many writes, then none (a conflict that passes); every time when absent. */
      times: z.int().positive().optional(),
      verb: z.enum(['update', 'patch']).optional(),
      resource: z.string().optional(),
    })
    .strict(),
  z.object({ kind: z.literal('nodeNeverReturns'), node: z.string() }).strict(),
  z
    .object({
      /**
       * A control-plane component on a node exits at start when its command lacks `--<flag>` (something
       * on that host depends on it): a kube-apiserver that crash-loops with the migration's new flags.
       */
      kind: z.literal('crashWithoutFlag'),
      node: z.string(),
      component: z.enum(['kube-apiserver', 'kube-controller-manager']),
      flag: z.string().min(1),
    })
    .strict(),
  z
    .object({
      /**
       * A new node of group `group` joins at `after` (from the twin's start) with the group's files as the
       * spec gives them: the template it was launched from, whatever a migration did to the other nodes
       * (an autoscaler or a replaced instance weeks after the upgrade, from user data nobody edited).
       */
      kind: z.literal('nodeJoins'),
      group: LabelNameSchema,
      after: DurationSchema,
    })
    .strict(),
  z
    .object({
      /**
       * The cloud's instance lookups for one node fail for the chosen controllers: `external` (a CCM, a
       * cloud-node-manager), `in-tree` (kube-controller-manager's cloud loops) or `both`. `notFound` reads as
       * "no such instance" (a wrong region, a name the CCM cannot map: its node-lifecycle controller deletes
       * a NotReady node for it); `unauthorized` is an error (a credential failure: lookups are retried).
       */
      kind: z.literal('cloudLookupFails'),
      node: z.string(),
      by: z.enum(['external', 'in-tree', 'both']),
      error: z.enum(['notFound', 'unauthorized']),
      /** From the twin's start. */
      after: DurationSchema.default(0),
      /** Absent: it lasts. */
      duration: DurationSchema.optional(),
    })
    .strict(),
  z
    .object({
      kind: z.literal('apiOutage'),
      /** From the twin's start. */
      after: DurationSchema,
      duration: DurationSchema,
    })
    .strict(),
]);
export type Fault = z.infer<typeof FaultSchema>;

/**
 * An image the twin's containers run, as far as it differs from the rest: every image is taken to have the
 * programs the twin's pods run (node, nsenter) unless it says what it lacks.
 */
export const ImageSchema = z
  .object({
    /** Programs not on the image's PATH, e.g. `[nsenter]` for a Node image without util-linux or busybox. */
    lacks: z.array(z.string().min(1)).default([]),
  })
  .strict();

/**
 * An API object the cluster holds from the start, as kubeadm leaves them (the kubeadm-config ConfigMap, a
 * LoadBalancer Service …). Checked against the twin's resource types when the twin starts.
 */
export const SpecObjectSchema = z
  .object({
    apiVersion: z.string().min(1),
    kind: z.string().min(1),
    metadata: z.object({ name: z.string().min(1), namespace: z.string().optional() }).loose(),
  })
  .loose();

export const TwinSpecSchema = z
  .object({
    kind: z.literal('ClusterTwin'),
    name: LabelNameSchema,
    kubernetesVersion: KubernetesVersionSchema,
    cloud: CloudSchema,
    latencies: LatenciesSchema.default(LatenciesSchema.parse({})),
    nodeGroups: z.array(NodeGroupSchema).min(1),
    faults: z.array(FaultSchema).default([]),
    objects: z.array(SpecObjectSchema).default([]),
    /** Images by reference (as a pod names them) that lack programs; see ImageSchema. */
    images: z.record(z.string().min(1), ImageSchema).default({}),
  })
  .strict()
  .superRefine(
    (spec, ctx) => {
      checkNodeNames(spec.nodeGroups, ctx);
      checkZones(spec.cloud, ctx);
      spec.nodeGroups.forEach((group, i) => {
        checkStaticPods(group, i, ctx);
      });
      checkApiServer(spec.nodeGroups, ctx);
      checkJoiningGroups(spec, ctx);
    },
    // Only over fields that passed: zod runs a refinement past a failed max(), and a count of 1e308 would
    // then be expanded into node names (RangeError: Invalid array length; the bad-input corpus's find).
    { when: (payload) => payload.issues.length === 0 },
  );
export type TwinSpec = z.infer<typeof TwinSpecSchema>;
export type TwinSpecInput = z.input<typeof TwinSpecSchema>;

type RefinementContext = z.core.$RefinementCtx<unknown>;

/** Group names are unique (the cloud places nodes by group) and so are node names across groups. */
function checkNodeNames(groups: readonly NodeGroup[], ctx: RefinementContext): void {
  const groupNames = new Set<string>();
  const seen = new Set<string>();
  groups.forEach((group, i) => {
    if (groupNames.has(group.name)) {
      ctx.addIssue({
        code: 'custom',
        path: ['nodeGroups', i, 'name'],
        message: `group ${group.name} is defined twice`,
      });
    }
    groupNames.add(group.name);
    if (group.names && group.names.length !== group.count && group.count !== 1) {
      ctx.addIssue({
        code: 'custom',
        path: ['nodeGroups', i, 'names'],
        message: 'names must have count entries',
      });
    }
    for (const name of nodeNames(group)) {
      if (seen.has(name)) {
        ctx.addIssue({
          code: 'custom',
          path: ['nodeGroups', i, group.names ? 'names' : 'name'],
          message: `node ${name} is defined twice`,
        });
      }
      seen.add(name);
    }
  });
  if (!groups.some((g) => g.role === 'control-plane' && nodeNames(g).length > 0)) {
    ctx.addIssue({
      code: 'custom',
      path: ['nodeGroups'],
      message: 'at least one control-plane node is required',
    });
  }
}

/** A node that joins later belongs to a group of the spec: its files are that group's. */
function checkJoiningGroups(spec: Pick<TwinSpec, 'nodeGroups' | 'faults'>, ctx: RefinementContext): void {
  const groups = spec.nodeGroups.map((g) => g.name);
  spec.faults.forEach((f, i) => {
    if (f.kind === 'nodeJoins' && !groups.includes(f.group)) {
      ctx.addIssue({
        code: 'custom',
        path: ['faults', i, 'group'],
        message: `no node group ${f.group} (the spec's groups: ${groups.join(', ')})`,
      });
    }
  });
}

/**
 * On AWS and GCE a zone name starts with its region (`us-east-1a`, `us-west-2-lax-1a`, `europe-west1-b`,
 * the value of topology.kubernetes.io/zone): a zone of another region would give nodes labels that no
 * real cloud controller could produce. (Not Azure: its nodes outside availability zones report their
 * fault domain, `0`, `1`, as the zone.)
 * https://kubernetes.io/docs/reference/labels-annotations-taints/#topologykubernetesiozone
 */
const ZONES_NAMED_AFTER_REGION: ReadonlySet<Provider> = new Set(['aws', 'gce']);

function checkZones(cloud: Cloud, ctx: RefinementContext): void {
  for (const [node, instance] of Object.entries(cloud.instances)) {
    if (instance.zone !== undefined && !cloud.zones.includes(instance.zone)) {
      ctx.addIssue({
        code: 'custom',
        path: ['cloud', 'instances', node, 'zone'],
        message: `zone ${instance.zone} is not one of cloud.zones`,
      });
    }
  }
  if (!ZONES_NAMED_AFTER_REGION.has(cloud.provider)) return;
  cloud.zones.forEach((zone, i) => {
    if (!zone.startsWith(cloud.region)) {
      ctx.addIssue({
        code: 'custom',
        path: ['cloud', 'zones', i],
        message: `zone ${zone} is not in region ${cloud.region}`,
      });
    }
  });
}

/** The values the twin substitutes into a host file for one node. */
export interface HostFileValues {
  readonly nodeName: string;
  readonly nodeIP: string;
  /** The node's position among all nodes of the spec, from 0 (NodePlacement.index). */
  readonly index: number;
}

/** A group's file as it is written on one node: `{{nodeName}}`, `{{nodeIP}}` and `{{index}}` replaced. */
export function renderHostFile(text: string, values: HostFileValues): string {
  return text
    .replaceAll('{{nodeName}}', values.nodeName)
    .replaceAll('{{nodeIP}}', values.nodeIP)
    .replaceAll('{{index}}', String(values.index));
}

/** What the kubelet needs of a static pod manifest to run it. */
const StaticPodSchema = z.object({
  kind: z.literal('Pod'),
  metadata: z.object({ name: z.string().min(1), labels: z.record(z.string(), z.string()).optional() }),
  spec: z.object({ containers: z.array(z.object({ name: z.string().min(1) })).min(1) }),
});
type StaticPod = z.infer<typeof StaticPodSchema>;

/**
 * The files the kubelet's file source reads as static pods: every file directly in the static pod
 * directory, except hidden ones (pkg/kubelet/config/file.go skips names starting with a dot).
 */
function staticPodPaths(group: NodeGroup): string[] {
  return Object.keys(group.files).filter((p) => {
    const base = path.posix.basename(p);
    return path.posix.dirname(p) === STATIC_POD_DIR && !base.startsWith('.');
  });
}

/** A group's static pod manifest, rendered for its first node and parsed; an error message when it is not a Pod. */
function parseStaticPod(group: NodeGroup, file: string): StaticPod | string {
  const text = renderHostFile(group.files[file] ?? '', {
    nodeName: nodeNames(group)[0] ?? group.name,
    nodeIP: '10.0.0.11',
    index: 0,
  });
  let doc: unknown;
  try {
    doc = parseYaml(text);
  } catch (err) {
    return `static pod manifest is not valid YAML: ${firstLine(err)}`;
  }
  const pod = StaticPodSchema.safeParse(doc);
  if (pod.success) return pod.data;
  const problems = pod.error.issues.map((issue) => `${formatPath(issue.path)}: ${issue.message}`);
  return `static pod manifest is not a Pod the kubelet can run (${problems.join('; ')})`;
}

/**
 * Every static pod manifest parses as a Pod. The real kubelet skips a file it cannot decode (with a log
 * line); a spec that starts a cluster with one is a mistake, and a test of a broken manifest writes it at
 * run time, where the kubelet model meets it like the real one.
 */
function checkStaticPods(group: NodeGroup, index: number, ctx: RefinementContext): void {
  for (const file of staticPodPaths(group)) {
    const pod = parseStaticPod(group, file);
    if (typeof pod === 'string') {
      ctx.addIssue({ code: 'custom', path: ['nodeGroups', index, 'files', file], message: pod });
    }
  }
}

function isApiServerPod(pod: StaticPod): boolean {
  return (
    pod.metadata.name === 'kube-apiserver' ||
    pod.metadata.labels?.component === 'kube-apiserver' ||
    pod.spec.containers.some((c) => c.name === 'kube-apiserver')
  );
}

/**
 * The twin's API server IS the kube-apiserver static pods (as on a kubeadm cluster): a spec where no
 * control-plane node runs one would never answer, so it is refused here rather than timing out at start.
 */
function checkApiServer(groups: readonly NodeGroup[], ctx: RefinementContext): void {
  const controlPlane = groups.filter((g) => g.role === 'control-plane' && nodeNames(g).length > 0);
  // No control-plane node at all is reported by checkNodeNames.
  if (controlPlane.length === 0) return;
  const runsApiServer = controlPlane.some((g) =>
    staticPodPaths(g).some((file) => {
      const pod = parseStaticPod(g, file);
      return typeof pod !== 'string' && isApiServerPod(pod);
    }),
  );
  if (!runsApiServer) {
    ctx.addIssue({
      code: 'custom',
      path: ['nodeGroups'],
      message: `no control-plane node runs kube-apiserver: add its static pod manifest (${STATIC_POD_DIR}/kube-apiserver.yaml) to a control-plane group's files`,
    });
  }
}

/** The node names of a group, in order. */
export function nodeNames(group: Pick<NodeGroup, 'name' | 'count' | 'names'>): string[] {
  if (group.names) return [...group.names];
  return Array.from({ length: group.count }, (_, i) => `${group.name}-${i + 1}`);
}

/** Bad spec input: the message lists each problem with its field path. */
export class TwinSpecError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'TwinSpecError';
  }
}

/** `nodeGroups[0].files["/etc/kubernetes/cloud.conf"]`: the path as a reader would write it. */
function formatPath(segments: readonly PropertyKey[]): string {
  if (segments.length === 0) return '(root)';
  return segments
    .map((segment, i) => {
      if (typeof segment === 'number') return `[${segment}]`;
      const key = String(segment);
      if (/^[A-Za-z_$][\w$]*$/.test(key)) return i === 0 ? key : `.${key}`;
      return `[${JSON.stringify(key)}]`;
    })
    .join('');
}

interface SpecProblem {
  readonly path: readonly PropertyKey[];
  readonly message: string;
}

function specError(source: string, problems: readonly SpecProblem[]): TwinSpecError {
  const lines = problems.map((p) => `  - ${formatPath(p.path)}: ${p.message}`);
  return new TwinSpecError(`invalid twin spec ${source}:\n${lines.join('\n')}`);
}

/** Validate a parsed spec object. File references must have been resolved (see loadTwinSpec). */
export function parseTwinSpec(input: unknown, source = '(inline)'): TwinSpec {
  const result = TwinSpecSchema.safeParse(input);
  if (!result.success) throw specError(source, result.error.issues);
  return result.data;
}

interface FileRef {
  readonly file: string;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isFileRef(value: unknown): value is FileRef {
  return isRecord(value) && typeof value.file === 'string' && Object.keys(value).length === 1;
}

/**
 * A `{ file }` reference in a raw spec document and where its contents go: a node group's host file takes
 * the text as it is, an entry of `objects` takes the YAML object the file holds.
 */
interface FileRefSite {
  readonly ref: FileRef;
  readonly path: readonly PropertyKey[];
  place(text: string): void;
}

function fileRefSites(doc: unknown): FileRefSite[] {
  if (!isRecord(doc)) return [];
  const hostFiles = (Array.isArray(doc.nodeGroups) ? doc.nodeGroups : []).flatMap(
    (group: unknown, i): FileRefSite[] => {
      if (!isRecord(group) || !isRecord(group.files)) return [];
      const files = group.files;
      return Object.entries(files).flatMap(([hostFile, ref]) =>
        isFileRef(ref)
          ? [
              {
                ref,
                path: ['nodeGroups', i, 'files', hostFile],
                place: (text: string) => (files[hostFile] = text),
              },
            ]
          : [],
      );
    },
  );
  const objects = Array.isArray(doc.objects) ? doc.objects : [];
  const objectFiles = objects.flatMap((ref: unknown, i): FileRefSite[] =>
    isFileRef(ref)
      ? [{ ref, path: ['objects', i], place: (text: string) => (objects[i] = parseYaml(text)) }]
      : [],
  );
  return [...hostFiles, ...objectFiles];
}

/**
 * Replace, in place, each `{ file }` reference of a raw spec document with the contents of that file,
 * relative to the spec's directory. Each file is read once however many groups name it.
 */
async function resolveFileRefs(doc: unknown, specFile: string): Promise<SpecProblem[]> {
  const baseDir = path.dirname(specFile);
  const reads = new Map<string, Promise<string>>();
  const problems = await Promise.all(
    fileRefSites(doc).map(async (site): Promise<SpecProblem[]> => {
      const target = path.resolve(baseDir, site.ref.file);
      const read = reads.get(target) ?? readFile(target, 'utf8');
      reads.set(target, read);
      let text: string;
      try {
        text = await read;
      } catch (err) {
        return [{ path: site.path, message: `cannot read ${site.ref.file}: ${errorCode(err)}` }];
      }
      try {
        site.place(text);
        return [];
      } catch (err) {
        return [{ path: site.path, message: `${site.ref.file} is not valid YAML: ${firstLine(err)}` }];
      }
    }),
  );
  return problems.flat();
}

/** The YAML library's messages go on to draw the offending line; its first line names line and column. */
function firstLine(err: unknown): string {
  return (String((err as Error).message).split('\n')[0] ?? '').replace(/:$/, '');
}

function errorCode(err: unknown): string {
  return (err as NodeJS.ErrnoException).code ?? String(err);
}

/** Read and validate a spec file (YAML or JSON), resolving its `{ file }` references. */
export async function loadTwinSpec(file: string): Promise<TwinSpec> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    throw new TwinSpecError(`cannot read twin spec ${file}: ${errorCode(err)}`, { cause: err });
  }
  let doc: unknown;
  try {
    doc = parseYaml(text);
  } catch (err) {
    // Every failure to parse comes from the text (syntax, duplicate keys, too many aliases, several documents).
    throw new TwinSpecError(`twin spec ${file} is not valid YAML: ${firstLine(err)}`, { cause: err });
  }
  const problems = await resolveFileRefs(doc, file);
  if (problems.length > 0) throw specError(file, problems);
  return parseTwinSpec(doc, file);
}
