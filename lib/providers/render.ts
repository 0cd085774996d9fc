/**
 * The objects of a provider's CCM, ready for server-side apply: the provider's asset manifest with the
 * image for the cluster's version, the cluster's name, the replicas the step wants, ccm-migrate's labels
 * and, when the cluster has one, its cloud config. Pure and deterministic: the same input gives the same
 * objects, so applying them again changes nothing.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { V1Container, V1Deployment } from '@kubernetes/client-node';
import { parseAllDocuments } from 'yaml';
import * as z from 'zod';
import { setFlags } from '../controlplane/flags.ts';
import { parseInput } from '../store/run-record.ts';
import { ccmImageFor, PROVIDERS, type ProviderFacts, providerFacts } from './catalog.ts';

export const MANAGED_BY_LABELS = { 'app.kubernetes.io/managed-by': 'ccm-migrate' } as const;

/** On the CCM's Deployment and pods, whatever the provider: how steps find the workload ccm-migrate runs. */
export const CCM_LABELS = {
  ...MANAGED_BY_LABELS,
  'app.kubernetes.io/component': 'cloud-controller-manager',
} as const;
export const CCM_LABEL_SELECTOR = Object.entries(CCM_LABELS)
  .map(([k, v]) => `${k}=${v}`)
  .join(',');

/** The cloud config, carried in a Secret (it can hold credentials), mounted read-only. */
export const CLOUD_CONFIG_SECRET = 'cloud-controller-manager-config';
export const CLOUD_CONFIG_DIR = '/etc/kubernetes/cloud-config';
/** Changes with the cloud config, so that a new config restarts the pods (a mounted Secret alone would not). */
export const CLOUD_CONFIG_HASH_ANNOTATION = 'ccm-migrate/cloud-config-sha256';
const CLOUD_CONFIG_VOLUME = 'cloud-config';

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
  replicas: z.int().min(0),
  /** The in-tree cloud config file's text; absent or blank: the cluster has none (AWS then uses IMDS). */
  cloudConfig: z.string().optional(),
});
export type RenderInput = z.input<typeof RenderInputSchema>;

const ASSETS = new URL('../../assets/providers/', import.meta.url);
const manifests = new Map<string, readonly KubeObject[]>();

/** A provider's asset manifest, parsed once; a broken asset is a bug of ccm-migrate, not bad input. */
function manifest(facts: ProviderFacts): readonly KubeObject[] {
  let objects = manifests.get(facts.manifest);
  if (!objects) {
    const file = new URL(facts.manifest, ASSETS);
    objects = parseAllDocuments(readFileSync(file, 'utf8')).map((doc, i) => {
      if (doc.errors.length > 0)
        throw new Error(`${file.pathname} document ${i + 1}: ${doc.errors[0]?.message}`);
      const parsed = KubeObjectSchema.safeParse(doc.toJS());
      if (!parsed.success) throw new Error(`${file.pathname} document ${i + 1}: ${parsed.error.message}`);
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

/** The CCM Deployment set up for this input (a copy: the cached manifest is never changed). */
function deployment(
  obj: KubeObject,
  facts: ProviderFacts,
  input: z.output<typeof RenderInputSchema>,
  cloudConfig: string | undefined,
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
  const ready: V1Container = {
    ...container,
    image: ccmImageFor(input.provider, input.kubernetesVersion).image,
    args: setFlags(container.args ?? [], {
      'cloud-provider': facts.ccmCloudProvider,
      'cluster-name': input.clusterName,
      'cloud-config': cloudConfig === undefined ? null : configFile,
    }),
  };
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
  pod.containers = pod.containers.map((c) => (c === container ? ready : c));
  return { ...d, metadata: withLabels(d.metadata, CCM_LABELS) };
}

/**
 * The provider's CCM objects in apply order (RBAC and the config Secret before the Deployment that needs
 * them), every one labelled app.kubernetes.io/managed-by=ccm-migrate. Bad input is InvalidInputError; a
 * provider without facts, or a version without an image, is UnsupportedProviderError.
 */
export function renderCcmObjects(input: RenderInput): KubeObject[] {
  const parsed = parseInput(RenderInputSchema, input, 'CCM render input');
  const facts = providerFacts(parsed.provider);
  const cloudConfig = parsed.cloudConfig?.trim() ? parsed.cloudConfig : undefined;
  const isCcm = (o: KubeObject) =>
    o.kind === 'Deployment' &&
    o.metadata.name === facts.deploymentName &&
    o.metadata.namespace === facts.namespace;
  const objects = manifest(facts);
  if (!objects.some(isCcm)) throw new Error(`${facts.manifest} has no Deployment ${facts.deploymentName}`);
  return objects.flatMap((o) => {
    if (!isCcm(o)) {
      const copy = structuredClone(o);
      return [{ ...copy, metadata: withLabels(copy.metadata, MANAGED_BY_LABELS) }];
    }
    const ccm = deployment(o, facts, parsed, cloudConfig);
    return cloudConfig === undefined ? [ccm] : [cloudConfigSecret(facts, cloudConfig), ccm];
  });
}

/** Where the provider's CCM Deployment is. */
export function ccmDeploymentRef(provider: string): { readonly namespace: string; readonly name: string } {
  const facts = providerFacts(provider);
  return { namespace: facts.namespace, name: facts.deploymentName };
}
