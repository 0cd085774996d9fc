/**
 * The twin spec: a YAML description of a simulated cluster (nodes, versions, cloud, node files, latencies,
 * faults). Validated here; every error names the field path. A user can write one from a real cluster and
 * rehearse a migration on it.
 */
import { readFile } from 'node:fs/promises';
import { parse as parseYaml, YAMLParseError } from 'yaml';
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

export const LatenciesSchema = z
  .object({
    /** From a changed static pod manifest to the new mirror pod being Ready. */
    staticPodRestart: DurationSchema.default(2000),
    /** From a kubelet restart to the node being Ready again. */
    kubeletRestart: DurationSchema.default(1000),
    /** From a workload pod being created to it being Ready. */
    podStart: DurationSchema.default(500),
    /** How long a cloud controller takes to initialise one node. */
    nodeInit: DurationSchema.default(200),
    /** How often each kubelet looks at its static pod directory (the real file source polls every 20 s). */
    fileCheck: DurationSchema.default(100),
    /** Added to every API request. */
    apiRequest: DurationSchema.default(0),
    /** How long a node agent Job's pod takes to run (pull, start) before the agent itself. */
    jobStart: DurationSchema.default(100),
    /** Lease duration of KCM/CCM leader election. */
    leaseDuration: DurationSchema.default(15_000),
  })
  .strict();
export type Latencies = z.infer<typeof LatenciesSchema>;

export const NodeGroupSchema = z
  .object({
    /** Nodes are named `<name>-1` … `<name>-<count>` unless `names` is given. */
    name: z.string().regex(NODE_NAME, 'must be a DNS label'),
    count: z.number().int().min(0).max(20_000).default(1),
    /** Explicit node names, instead of `<name>-<i>`; their number is the count. */
    names: z.array(z.string().regex(NODE_NAME, 'must be a DNS subdomain')).optional(),
    role: z.enum(['control-plane', 'worker']),
    labels: z.record(z.string(), z.string()).default({}),
    /**
     * Files of each host, by absolute path. `{{nodeName}}`, `{{nodeIP}}` and `{{index}}` are replaced per node.
     * Control-plane nodes hold the static pod manifests under /etc/kubernetes/manifests.
     */
    files: z.record(z.string().regex(/^\/[^\0]*$/, 'file paths must be absolute'), z.string()).default({}),
  })
  .strict();
export type NodeGroup = z.infer<typeof NodeGroupSchema>;

export const CloudSchema = z
  .object({
    provider: ProviderSchema,
    region: z.string().min(1),
    zones: z.array(z.string().min(1)).min(1),
    /** Cloud account/project/subscription the providerIDs name. */
    project: z.string().default('ccm-migrate-twin'),
    /** Nodes whose instance the cloud does not know (an identity mismatch a CCM would delete them for). */
    missingInstances: z.array(z.string()).default([]),
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
  z.object({ kind: z.literal('nodeNeverReturns'), node: z.string() }).strict(),
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

export const TwinSpecSchema = z
  .object({
    kind: z.literal('ClusterTwin'),
    name: z.string().regex(NODE_NAME, 'must be a DNS label'),
    kubernetesVersion: KubernetesVersionSchema,
    cloud: CloudSchema,
    latencies: LatenciesSchema.default(LatenciesSchema.parse({})),
    nodeGroups: z.array(NodeGroupSchema).min(1),
    faults: z.array(FaultSchema).default([]),
  })
  .strict()
  .superRefine((spec, ctx) => {
    const seen = new Set<string>();
    spec.nodeGroups.forEach((group, i) => {
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
            path: ['nodeGroups', i, 'name'],
            message: `node ${name} is defined twice`,
          });
        }
        seen.add(name);
      }
    });
    if (!spec.nodeGroups.some((g) => g.role === 'control-plane' && nodeNames(g).length > 0)) {
      ctx.addIssue({
        code: 'custom',
        path: ['nodeGroups'],
        message: 'at least one control-plane node is required',
      });
    }
  });
export type TwinSpec = z.infer<typeof TwinSpecSchema>;
export type TwinSpecInput = z.input<typeof TwinSpecSchema>;

/** The node names of a group, in order. */
export function nodeNames(group: Pick<NodeGroup, 'name' | 'count' | 'names'>): string[] {
  if (group.names) return [...group.names];
  return Array.from({ length: group.count }, (_, i) => `${group.name}-${i + 1}`);
}

/** Bad spec input: the message lists each problem with its field path. */
export class TwinSpecError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'TwinSpecError';
  }
}

function formatIssues(source: string, error: z.ZodError): string {
  const lines = error.issues.map((issue) => {
    const path = issue.path.length ? issue.path.join('.') : '(root)';
    return `  - ${path}: ${issue.message}`;
  });
  return `invalid twin spec ${source}:\n${lines.join('\n')}`;
}

/** Validate a parsed spec object. */
export function parseTwinSpec(input: unknown, source = '(inline)'): TwinSpec {
  const result = TwinSpecSchema.safeParse(input);
  if (!result.success) throw new TwinSpecError(formatIssues(source, result.error));
  return result.data;
}

/** Read and validate a spec file (YAML or JSON). */
export async function loadTwinSpec(file: string): Promise<TwinSpec> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    throw new TwinSpecError(
      `cannot read twin spec ${file}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`,
    );
  }
  let doc: unknown;
  try {
    doc = parseYaml(text);
  } catch (err) {
    if (err instanceof YAMLParseError)
      throw new TwinSpecError(`twin spec ${file} is not valid YAML: ${err.message}`);
    throw err;
  }
  return parseTwinSpec(doc, file);
}
