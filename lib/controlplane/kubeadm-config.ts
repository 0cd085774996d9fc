/**
 * The ClusterConfiguration kubeadm keeps in the kube-system/kubeadm-config ConfigMap. `kubeadm upgrade`
 * regenerates the static pod manifests from it, so a migration that changed only the manifests would be
 * undone by the next upgrade: the same flag changes go here too. Both forms of extraArgs are handled: a map
 * (v1beta3, Kubernetes ≤ 1.30) and a list of {name, value} (v1beta4, 1.31+).
 */
import { isMap, isSeq, parseDocument, type YAMLMap, type YAMLSeq } from 'yaml';
import { InvalidInputError } from '../errors.ts';
import { setFeatureGates } from './flags.ts';

export const KUBEADM_CONFIG = {
  namespace: 'kube-system',
  name: 'kubeadm-config',
  key: 'ClusterConfiguration',
} as const;

export interface ComponentChanges {
  /** A flag's new value, or null to remove it. */
  readonly flags?: Readonly<Record<string, string | null>>;
  readonly featureGates?: Readonly<Record<string, boolean | null>>;
  /** Remove the extraVolume that mounts the file a removed --cloud-config pointed at. */
  readonly dropCloudConfigVolume?: boolean;
}

export interface ClusterConfigurationEdit {
  readonly apiServer?: ComponentChanges;
  readonly controllerManager?: ComponentChanges;
}

/** extraArgs as name → value, whichever form the document uses. */
function readArgs(node: unknown): Map<string, string> {
  if (isMap(node)) {
    return new Map(Object.entries(node.toJSON() as Record<string, unknown>).map(([k, v]) => [k, String(v)]));
  }
  if (isSeq(node)) {
    const items = node.toJSON() as { name?: unknown; value?: unknown }[];
    return new Map(items.map((i) => [String(i.name), String(i.value)]));
  }
  return new Map();
}

type Doc = ReturnType<typeof parseDocument>;

function setArg(doc: Doc, section: YAMLMap, name: string, value: string | null): void {
  const args = section.get('extraArgs', true);
  if (isSeq(args)) {
    const seq = args as YAMLSeq<YAMLMap>;
    const index = seq.items.findIndex((item) => isMap(item) && item.get('name') === name);
    if (value === null) {
      if (index >= 0) seq.items.splice(index, 1);
    } else if (index >= 0) (seq.items[index] as YAMLMap).set('value', value);
    else seq.items.push(doc.createNode({ name, value }) as YAMLMap);
    return;
  }
  if (value === null) {
    if (isMap(args)) (args as YAMLMap).delete(name);
    return;
  }
  if (isMap(args)) (args as YAMLMap).set(name, value);
  else section.set('extraArgs', doc.createNode({ [name]: value }));
}

function dropVolume(section: YAMLMap, file: string): void {
  const volumes = section.get('extraVolumes', true);
  if (!isSeq(volumes)) return;
  volumes.items = volumes.items.filter(
    (v) => !(isMap(v) && (v.get('hostPath') === file || v.get('mountPath') === file)),
  );
}

function editComponent(doc: Doc, key: string, changes: ComponentChanges): void {
  const section = doc.get(key, true);
  if (!isMap(section)) {
    // No section means no extraArgs to take out; one is only created to set something.
    if (!Object.values(changes.flags ?? {}).some((v) => v !== null)) return;
    doc.set(key, doc.createNode({}));
  }
  const map = doc.get(key, true) as YAMLMap;
  const before = readArgs(map.get('extraArgs', true));
  for (const [name, value] of Object.entries(changes.flags ?? {})) setArg(doc, map, name, value);
  const gates = before.get('feature-gates');
  if (gates !== undefined && changes.featureGates) {
    const next = setFeatureGates(gates, changes.featureGates);
    setArg(doc, map, 'feature-gates', next === '' ? null : next);
  }
  const cloudConfig = before.get('cloud-config');
  if (changes.dropCloudConfigVolume && cloudConfig && changes.flags?.['cloud-config'] === null) {
    dropVolume(map, cloudConfig);
  }
}

/** The ClusterConfiguration with the changes made; the text itself when nothing changes. */
export function editClusterConfiguration(
  text: string,
  edit: ClusterConfigurationEdit,
): { text: string; changed: boolean } {
  const doc = parseDocument(text);
  if (doc.errors.length > 0 || !isMap(doc.contents) || doc.get('kind') !== 'ClusterConfiguration') {
    throw new InvalidInputError(
      `${KUBEADM_CONFIG.namespace}/${KUBEADM_CONFIG.name} ${KUBEADM_CONFIG.key} is not a ClusterConfiguration kubeadm wrote${doc.errors[0] ? ` (${doc.errors[0].code})` : ''}`,
    );
  }
  const before = doc.toString();
  if (edit.apiServer) editComponent(doc, 'apiServer', edit.apiServer);
  if (edit.controllerManager) editComponent(doc, 'controllerManager', edit.controllerManager);
  const after = doc.toString();
  return after === before ? { text, changed: false } : { text: after, changed: true };
}

/** The extraArgs of a section (for checks and snapshots). */
export function clusterConfigurationArgs(
  text: string,
  key: 'apiServer' | 'controllerManager',
): Map<string, string> {
  const doc = parseDocument(text);
  const section = doc.get(key, true);
  return isMap(section) ? readArgs(section.get('extraArgs', true)) : new Map();
}
