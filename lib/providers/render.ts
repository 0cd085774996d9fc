/**
 * The objects of a provider's CCM, ready for server-side apply: the provider's asset manifest with the
 * image for the cluster's version, the cluster's name, the replicas the step wants, ccm-migrate's labels
 * and, when the cluster has one, its cloud config. Pure and deterministic: the same input gives the same
 * objects, so applying them again changes nothing.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { V1DaemonSet, V1Deployment, V1PodSpec } from '@kubernetes/client-node';
import { parseAllDocuments } from 'yaml';
import * as z from 'zod';
import { parseFlags, setFlags } from '../controlplane/flags.ts';
import { InvalidInputError, UnsupportedProviderError } from '../errors.ts';
import { labelSelectorOf } from '../kube/well-known.ts';
import { packageFile } from '../package-root.ts';
import { parseInput } from '../store/run-record.ts';
import { ccmImageFor, PROVIDERS, type ProviderFacts, providerFacts } from './catalog.ts';
import { CCM_WORKLOADS } from './ccm-workload.ts';
import { ccmNodeNetworkFlags, controllerEnabled, NodeNetworkSchema } from './node-network.ts';

export const MANAGED_BY_LABELS = { 'app.kubernetes.io/managed-by': 'ccm-migrate' } as const;

/** On the CCM's Deployment and pods, whatever the provider: how steps find the workload ccm-migrate runs. */
export const CCM_LABELS = {
  ...MANAGED_BY_LABELS,
  'app.kubernetes.io/component': 'cloud-controller-manager',
} as const;
export const CCM_LABEL_SELECTOR = labelSelectorOf(CCM_LABELS);

/** The cloud config, carried in a Secret (it can hold credentials), mounted read-only. */
export const CLOUD_CONFIG_SECRET = 'cloud-controller-manager-config';
export const CLOUD_CONFIG_DIR = '/etc/kubernetes/cloud-config';
/** Changes with the cloud config, so that a new config restarts the pods (a mounted Secret alone would not). */
export const CLOUD_CONFIG_HASH_ANNOTATION = 'ccm-migrate/cloud-config-sha256';
const CLOUD_CONFIG_VOLUME = 'cloud-config';
const CREDENTIALS_VOLUME = 'cloud-credentials';

/**
 * A node label no node carries: a DaemonSet has no replicas to scale to zero, so the staged (or stopped)
 * one selects no node and runs nowhere.
 */
export const STAGED_NODE_SELECTOR = { 'ccm-migrate/staged': 'no-node' } as const;
const [STAGED_KEY, STAGED_VALUE] = Object.entries(STAGED_NODE_SELECTOR)[0] as [string, string];

/** The part of a CCM workload (Deployment or DaemonSet) that says whether it runs pods. */
interface WorkloadSpec {
  readonly replicas?: number;
  readonly template?: { readonly spec?: { readonly nodeSelector?: Readonly<Record<string, string>> } };
}

/** Whether a CCM workload runs no pod on purpose: a Deployment at zero replicas, a DaemonSet staged. */
export function isStagedCcm(kind: string | undefined, spec: WorkloadSpec | undefined): boolean {
  if (kind === 'DaemonSet') return spec?.template?.spec?.nodeSelector?.[STAGED_KEY] === STAGED_VALUE;
  return spec?.replicas === 0;
}

export const KubeObjectSchema = z.looseObject({
  apiVersion: z.string().min(1),
  kind: z.string().min(1),
  metadata: z.looseObject({
    name: z.string().min(1),
    namespace: z.string().min(1).optional(),
    labels: z.record(z.string(), z.string()).optional(),
    annotations: z.record(z.string(), z.string()).optional(),
  }),
});
export type KubeObject = z.infer<typeof KubeObjectSchema>;

export const RenderInputSchema = z.object({
  provider: z.enum(PROVIDERS),
  kubernetesVersion: z.string(),
  /**
   * kube-controller-manager's `--cluster-name` (default `kubernetes`): the CCM names and tags cloud load
   * balancers by it, so another name would orphan the existing ones.
   */
  clusterName: z.string().max(253).regex(/^\S+$/, 'a cluster name without spaces'),
  /** A Deployment's replicas; a DaemonSet runs on every control-plane node, and at 0 on none (staged). */
  replicas: z.int().min(0),
  workload: z.enum(CCM_WORKLOADS).default('deployment'),
  /** The in-tree cloud config file's text; absent or blank: the cluster has none (AWS then uses IMDS). */
  cloudConfig: z.string().optional(),
  /**
   * Or: where the in-tree cloud config already is on every control-plane node (kube-controller-manager's
   * --cloud-config). The CCM runs on those nodes and mounts it from there, so its credentials never leave
   * the nodes they are on (no copy in etcd). Used as is: no format translation.
   */
  cloudConfigHostPath: z.string().startsWith('/').optional(),
  /**
   * A Secret of the CCM's namespace that the config at cloudConfigHostPath reads credentials from (an
   * OpenStack clouds.yaml), mounted read-only where that config says: the credentials stay in their Secret.
   */
  credentialsSecret: z.object({ name: z.string().min(1), mountPath: z.string().startsWith('/') }).optional(),
  /**
   * Images by container name (`cloud-controller-manager`, `cloud-node-manager`) instead of the catalog's:
   * a mirrored registry in an air-gapped cluster.
   */
  images: z.record(z.string().min(1), z.string().regex(/^\S+$/, 'an image reference')).optional(),
  /**
   * What kube-controller-manager did with node CIDRs and cloud routes before the move (node-network.ts):
   * the CCM takes its routes over, and its CloudAllocator node IPAM. Absent: no routes, KCM keeps IPAM.
   */
  nodeNetwork: NodeNetworkSchema.optional(),
  /**
   * Whether the CCM runs its cloud-node-lifecycle controller, which deletes a NotReady Node whose instance
   * lookup says "does not exist". A run keeps it off until the CCM has initialised every node: a wrong
   * region or an unmappable name must fail the run, not delete Nodes.
   */
  nodeLifecycle: z.boolean().default(true),
});
export type RenderInput = z.input<typeof RenderInputSchema>;

const manifests = new Map<string, readonly KubeObject[]>();

/** A provider's asset manifest, parsed once; a broken asset is a bug of ccm-migrate, not bad input. */
function manifest(facts: ProviderFacts): readonly KubeObject[] {
  let objects = manifests.get(facts.manifest);
  if (!objects) {
    const file = packageFile(`assets/providers/${facts.manifest}`);
    objects = parseAllDocuments(readFileSync(file, 'utf8')).map((doc, i) => {
      if (doc.errors.length > 0) throw new Error(`${file} document ${i + 1}: ${doc.errors[0]?.message}`);
      const parsed = KubeObjectSchema.safeParse(doc.toJS());
      if (!parsed.success) throw new Error(`${file} document ${i + 1}: ${parsed.error.message}`);
      return parsed.data;
    });
    manifests.set(facts.manifest, objects);
  }
  return objects;
}

function withLabels<T extends { labels?: Record<string, string> }>(
  meta: T,
  labels: Record<string, string>,
): T {
  return { ...meta, labels: { ...meta.labels, ...labels } };
}

function cloudConfigSecret(facts: ProviderFacts, cloudConfig: string): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: CLOUD_CONFIG_SECRET, namespace: facts.namespace, labels: { ...MANAGED_BY_LABELS } },
    type: 'Opaque',
    // `data`, not `stringData`: stringData is write-only, so a re-apply would always look like a change.
    data: { [facts.cloudConfigFile]: Buffer.from(cloudConfig, 'utf8').toString('base64') },
  };
}

/** Containers named in `images` run that image: the catalog's, or the caller's override of it. */
function withImages(pod: V1PodSpec, images: Readonly<Record<string, string>>): void {
  pod.containers = pod.containers.map((c) => {
    const image = images[c.name];
    return image === undefined ? c : { ...c, image };
  });
}

/**
 * The node-lifecycle controller's names in `--controllers`: the alias every k8s.io/cloud-provider minor
 * knows, and its canonical name from 1.28 (names.CloudNodeLifecycleController).
 */
export const NODE_LIFECYCLE_CONTROLLERS = [
  'cloud-node-lifecycle',
  'cloud-node-lifecycle-controller',
] as const;

/**
 * `--controllers` without the node-lifecycle controller: the list as it was (the asset's, `*` when absent)
 * less any mention of it, then `-cloud-node-lifecycle` (the first mention of a name decides).
 */
function withoutNodeLifecycle(args: readonly string[]): string[] {
  const mentions = new Set(NODE_LIFECYCLE_CONTROLLERS.flatMap((name) => [name, `-${name}`]));
  const kept = (parseFlags(args).get('controllers') ?? '*').split(',').filter((c) => !mentions.has(c.trim()));
  return setFlags(args, { controllers: [...kept, `-${NODE_LIFECYCLE_CONTROLLERS[0]}`].join(',') });
}

/** Whether a CCM with these args runs its node-lifecycle controller. */
export function runsNodeLifecycle(args: readonly string[]): boolean {
  return controllerEnabled(parseFlags(args).get('controllers'), NODE_LIFECYCLE_CONTROLLERS);
}

/**
 * The cloud-node controller's workers (`--concurrent-node-syncs`, default 1). A run has the CCM initialise
 * every node again, up to maxUnavailable at a time (lib/steps/verify-node.ts), and one worker takes them
 * one after another: nodes × an instance lookup, minutes on a few hundred nodes. 10 is what
 * cloud-provider-gcp's kube-up runs (kops runs 5 for AWS); it also bounds the CCM's periodic address
 * updates, which go through the same workers.
 */
export const CCM_NODE_SYNCS = 10;
/** The first CCM releases on k8s.io/cloud-provider v0.27, which brought the flag (1.26's has one worker). */
const NODE_SYNCS_FLAG_MINOR = 27;

/**
 * `--concurrent-node-syncs` where the CCM takes it (an unknown flag makes a CCM exit): a binary with
 * cloud-provider's node controller flags, from its 1.27 release, running the catalog's image (an override
 * may be any build, and then keeps the default).
 */
function nodeSyncsFlag(
  facts: ProviderFacts,
  input: z.output<typeof RenderInputSchema>,
): Record<string, string> {
  const { minor } = ccmImageFor(input.provider, input.kubernetesVersion);
  const overridden = input.images?.[facts.containerName] !== undefined;
  const takesIt = facts.nodeControllerFlags !== false && minor >= NODE_SYNCS_FLAG_MINOR && !overridden;
  return takesIt ? { 'concurrent-node-syncs': String(CCM_NODE_SYNCS) } : {};
}

/** The CCM Deployment set up for this input (a copy: the cached manifest is never changed). */
function deployment(
  obj: KubeObject,
  facts: ProviderFacts,
  input: z.output<typeof RenderInputSchema>,
  cloudConfig: string | undefined,
  images: Readonly<Record<string, string>>,
): KubeObject {
  const d = structuredClone(obj) as unknown as V1Deployment & KubeObject;
  const spec = d.spec;
  const pod = spec?.template.spec;
  const container = pod?.containers.find((c) => c.name === facts.containerName);
  if (!spec || !pod || !container) {
    throw new Error(
      `${facts.manifest}: Deployment ${facts.deploymentName} has no container ${facts.containerName}`,
    );
  }
  spec.replicas = input.replicas;
  spec.template.metadata = withLabels(spec.template.metadata ?? {}, CCM_LABELS);
  const configFile = `${CLOUD_CONFIG_DIR}/${facts.cloudConfigFile}`;
  const args = setFlags(container.args ?? [], {
    'cloud-provider': facts.ccmCloudProvider,
    'cluster-name': input.clusterName,
    'cloud-config': input.cloudConfigHostPath ?? (cloudConfig === undefined ? null : configFile),
    ...ccmNodeNetworkFlags(facts, input.nodeNetwork),
    ...nodeSyncsFlag(facts, input),
  });
  const ready = { ...container, args: input.nodeLifecycle ? args : withoutNodeLifecycle(args) };
  if (cloudConfig !== undefined) {
    ready.volumeMounts = [
      ...(container.volumeMounts ?? []),
      { name: CLOUD_CONFIG_VOLUME, mountPath: CLOUD_CONFIG_DIR, readOnly: true },
    ];
    pod.volumes = [
      ...(pod.volumes ?? []),
      { name: CLOUD_CONFIG_VOLUME, secret: { secretName: CLOUD_CONFIG_SECRET } },
    ];
    spec.template.metadata.annotations = {
      ...spec.template.metadata.annotations,
      [CLOUD_CONFIG_HASH_ANNOTATION]: createHash('sha256').update(cloudConfig).digest('hex'),
    };
  }
  if (input.cloudConfigHostPath !== undefined) {
    ready.volumeMounts = [
      ...(container.volumeMounts ?? []),
      { name: CLOUD_CONFIG_VOLUME, mountPath: input.cloudConfigHostPath, readOnly: true },
    ];
    pod.volumes = [
      ...(pod.volumes ?? []),
      { name: CLOUD_CONFIG_VOLUME, hostPath: { path: input.cloudConfigHostPath, type: 'File' } },
    ];
  }
  if (input.credentialsSecret !== undefined) {
    ready.volumeMounts = [
      ...(ready.volumeMounts ?? []),
      { name: CREDENTIALS_VOLUME, mountPath: input.credentialsSecret.mountPath, readOnly: true },
    ];
    pod.volumes = [
      ...(pod.volumes ?? []),
      { name: CREDENTIALS_VOLUME, secret: { secretName: input.credentialsSecret.name } },
    ];
  }
  pod.containers = pod.containers.map((c) => (c === container ? ready : c));
  withImages(pod, images);
  return { ...d, metadata: withLabels(d.metadata, CCM_LABELS) };
}

/**
 * The CCM Deployment as a DaemonSet: the same metadata and pod template (nodeSelector, tolerations,
 * priority class, args), one pod per control-plane node instead of replicas, rolled one node at a time.
 */
function asDaemonSet(obj: KubeObject, staged: boolean): KubeObject {
  const d = obj as unknown as V1Deployment & KubeObject;
  const spec = d.spec as NonNullable<V1Deployment['spec']>;
  const pod = structuredClone(spec.template.spec) as V1PodSpec;
  // One pod per node by construction: the Deployment's anti-affinity has nothing left to spread.
  const { podAntiAffinity: _oneByConstruction, ...affinity } = pod.affinity ?? {};
  if (Object.keys(affinity).length > 0) pod.affinity = affinity;
  else delete pod.affinity;
  if (staged) pod.nodeSelector = { ...pod.nodeSelector, ...STAGED_NODE_SELECTOR };
  const ds: V1DaemonSet = {
    apiVersion: 'apps/v1',
    kind: 'DaemonSet',
    metadata: d.metadata,
    spec: {
      selector: spec.selector,
      template: { ...spec.template, spec: pod },
      updateStrategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 1 } },
    },
  };
  return ds as unknown as KubeObject;
}

/** A per-node DaemonSet (Azure's cloud-node-manager) with its images and ccm-migrate's label. */
function daemonSet(obj: KubeObject, images: Readonly<Record<string, string>>): KubeObject {
  const ds = structuredClone(obj) as unknown as V1DaemonSet & KubeObject;
  const pod = ds.spec?.template.spec;
  if (pod) withImages(pod, images);
  return { ...ds, metadata: withLabels(ds.metadata, MANAGED_BY_LABELS) };
}

/**
 * The image of every container render manages: the CCM's for the cluster's minor, the node manager's of
 * the same minor, then the caller's overrides, which must name one of those containers.
 */
function imagesFor(facts: ProviderFacts, input: z.output<typeof RenderInputSchema>): Record<string, string> {
  const ccm = ccmImageFor(input.provider, input.kubernetesVersion);
  const images: Record<string, string> = { [facts.containerName]: ccm.image };
  const nodeManager = facts.nodeManager;
  if (nodeManager) {
    const image = nodeManager.images[ccm.minor];
    if (!image) {
      throw new UnsupportedProviderError(
        `no ${facts.displayName} ${nodeManager.containerName} image for Kubernetes 1.${ccm.minor}, the minor of its cloud-controller-manager`,
      );
    }
    images[nodeManager.containerName] = image;
  }
  for (const [name, image] of Object.entries(input.images ?? {})) {
    if (!(name in images)) {
      throw new InvalidInputError(
        `an image override names container ${JSON.stringify(name)}; the ${facts.displayName} containers are ${Object.keys(images).join(', ')}`,
      );
    }
    images[name] = image;
  }
  return images;
}

/**
 * The provider's CCM objects in apply order (RBAC and the config Secret before the workload that needs
 * them: a Deployment, or a DaemonSet when `workload` says so), every one labelled
 * app.kubernetes.io/managed-by=ccm-migrate. Bad input (an override of a container that is not there, node IPAM for a provider whose CCM does not take it, no cloud config where
 * the CCM needs one) is InvalidInputError; an unknown provider, or a version without an image, is
 * UnsupportedProviderError. All are thrown before anything is applied. The objects themselves are held to
 * their kinds' OpenAPI schemas by the tests (test/providers/kube-object-schemas.ts), for every provider,
 * minor and workload, and by the API server on every apply; the validators stay out of the functions
 * (334 KB of a cluster function's 3 MB).
 */
export function renderCcmObjects(input: RenderInput): KubeObject[] {
  const parsed = parseInput(RenderInputSchema, input, 'CCM render input');
  const facts = providerFacts(parsed.provider);
  const cloudConfig = parsed.cloudConfig?.trim() ? parsed.cloudConfig : undefined;
  if (cloudConfig !== undefined && parsed.cloudConfigHostPath !== undefined) {
    throw new InvalidInputError('give the cloud config as text or as a host path, not both');
  }
  if (cloudConfig === undefined && parsed.cloudConfigHostPath === undefined && facts.cloudConfigRequired) {
    throw new InvalidInputError(
      `the ${facts.displayName} cloud-controller-manager needs the cluster's cloud config (${facts.cloudConfigFile}), and none was given`,
    );
  }
  if (parsed.credentialsSecret !== undefined && parsed.cloudConfigHostPath === undefined) {
    throw new InvalidInputError('a credentials Secret is read through a cloud config given as a host path');
  }
  if (parsed.nodeNetwork?.nodeIpam === 'cloud' && !facts.nodeIpam) {
    throw new InvalidInputError(
      `the ${facts.displayName} cloud-controller-manager does not take node IPAM over from kube-controller-manager`,
    );
  }
  const images = imagesFor(facts, parsed);
  const isCcm = (o: KubeObject) =>
    o.kind === 'Deployment' &&
    o.metadata.name === facts.deploymentName &&
    o.metadata.namespace === facts.namespace;
  const objects = manifest(facts);
  if (!objects.some(isCcm)) throw new Error(`${facts.manifest} has no Deployment ${facts.deploymentName}`);
  const rendered = objects.flatMap((o) => {
    if (o.kind === 'DaemonSet') return [daemonSet(o, images)];
    if (!isCcm(o)) {
      const copy = structuredClone(o);
      return [{ ...copy, metadata: withLabels(copy.metadata, MANAGED_BY_LABELS) }];
    }
    const d = deployment(o, facts, parsed, cloudConfig, images);
    const ccm = parsed.workload === 'daemonset' ? asDaemonSet(d, parsed.replicas === 0) : d;
    return cloudConfig === undefined ? [ccm] : [cloudConfigSecret(facts, cloudConfig), ccm];
  });
  return rendered;
}

/** Where the provider's CCM workload is: its Deployment or DaemonSet has the same name. */
export function ccmDeploymentRef(provider: string): { readonly namespace: string; readonly name: string } {
  const facts = providerFacts(provider);
  return { namespace: facts.namespace, name: facts.deploymentName };
}
