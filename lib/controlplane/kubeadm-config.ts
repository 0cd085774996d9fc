/**
 * The ClusterConfiguration kubeadm keeps in the kube-system/kubeadm-config ConfigMap. `kubeadm upgrade`
 * regenerates the static pod manifests from it, so a migration that changed only the manifests would be
 * undone by the next upgrade: the same flag changes go here too. Both forms of extraArgs are handled: a map
 * (v1beta3, Kubernetes ≤ 1.30) and a list of {name, value} (v1beta4, 1.31+).
 */
import { isDeepStrictEqual } from 'node:util';
import { isMap, isSeq, parseDocument, type YAMLMap, type YAMLSeq } from 'yaml';
import { InvalidInputError } from '../errors.ts';
import { featureGate } from './cloud-flag-rules.ts';
import { setFeatureGates } from './flags.ts';

export const KUBEADM_CONFIG = {
  namespace: 'kube-system',
  name: 'kubeadm-config',
  key: 'ClusterConfiguration',
} as const;

/** An entry of a section's extraVolumes, as the document holds it (hostPath, mountPath, name, ...). */
export type ExtraVolume = Readonly<Record<string, unknown>>;

type Section = 'apiServer' | 'controllerManager';
const SECTIONS: readonly Section[] = ['apiServer', 'controllerManager'];

export interface ComponentChanges {
  /** A flag's new value, or null to remove it. */
  readonly flags?: Readonly<Record<string, string | null>>;
  /** A gate's new value, or null to remove it; a feature-gates flag is only created to set one. */
  readonly featureGates?: Readonly<Record<string, boolean | null>>;
  /** Remove the extraVolume that mounts the file a removed --cloud-config pointed at. */
  readonly dropCloudConfigVolume?: boolean;
  /** extraVolumes to put back (as an earlier document had them), unless one has their name or mountPath. */
  readonly addVolumes?: readonly ExtraVolume[];
}

export type ClusterConfigurationEdit = { readonly [S in Section]?: ComponentChanges };

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

function readVolumes(node: unknown): ExtraVolume[] {
  return isSeq(node) ? (node.toJSON() as ExtraVolume[]) : [];
}

type Doc = ReturnType<typeof parseDocument>;

/** A section's extraArgs (name → value) and extraVolumes; empty when the document has no such section. */
function readSection(doc: Doc, key: Section): { args: Map<string, string>; volumes: ExtraVolume[] } {
  const section = doc.get(key, true);
  if (!isMap(section)) return { args: new Map(), volumes: [] };
  return {
    args: readArgs(section.get('extraArgs', true)),
    volumes: readVolumes(section.get('extraVolumes', true)),
  };
}

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

function addVolumes(doc: Doc, section: YAMLMap, volumes: readonly ExtraVolume[]): void {
  const present = section.get('extraVolumes', true);
  const held = readVolumes(present);
  const missing = volumes.filter((v) => !held.some((h) => h.name === v.name || h.mountPath === v.mountPath));
  if (missing.length === 0) return;
  // An emptied list is written `[]` (flow style): a new block list reads as kubeadm writes it.
  if (isSeq(present) && present.items.length > 0)
    for (const v of missing) present.items.push(doc.createNode(v));
  else section.set('extraVolumes', doc.createNode(missing));
}

const setsAny = (values: Readonly<Record<string, unknown>> = {}): boolean =>
  Object.values(values).some((v) => v !== null);

function editComponent(doc: Doc, key: Section, changes: ComponentChanges): void {
  if (!isMap(doc.get(key, true))) {
    // No section means nothing to take out; one is only created to set something.
    if (!setsAny(changes.flags) && !setsAny(changes.featureGates) && !changes.addVolumes?.length) return;
    doc.set(key, doc.createNode({}));
  }
  const map = doc.get(key, true) as YAMLMap;
  const before = readArgs(map.get('extraArgs', true));
  for (const [name, value] of Object.entries(changes.flags ?? {})) setArg(doc, map, name, value);
  const gates = before.get('feature-gates');
  if (changes.featureGates && (gates !== undefined || setsAny(changes.featureGates))) {
    const next = setFeatureGates(gates ?? '', changes.featureGates);
    setArg(doc, map, 'feature-gates', next === '' ? null : next);
  }
  const cloudConfig = before.get('cloud-config');
  if (changes.dropCloudConfigVolume && cloudConfig && changes.flags?.['cloud-config'] === null) {
    dropVolume(map, cloudConfig);
  }
  if (changes.addVolumes) addVolumes(doc, map, changes.addVolumes);
}

function parseClusterConfiguration(text: string): Doc {
  const doc = parseDocument(text);
  if (doc.errors.length > 0 || !isMap(doc.contents) || doc.get('kind') !== 'ClusterConfiguration') {
    throw new InvalidInputError(
      `${KUBEADM_CONFIG.namespace}/${KUBEADM_CONFIG.name} ${KUBEADM_CONFIG.key} is not a ClusterConfiguration kubeadm wrote${doc.errors[0] ? ` (${doc.errors[0].code})` : ''}`,
    );
  }
  return doc;
}

/** The ClusterConfiguration with the changes made; the text itself when nothing changes. */
export function editClusterConfiguration(
  text: string,
  edit: ClusterConfigurationEdit,
): { text: string; changed: boolean } {
  const doc = parseClusterConfiguration(text);
  const before = doc.toString();
  for (const key of SECTIONS) {
    const changes = edit[key];
    if (changes) editComponent(doc, key, changes);
  }
  const after = doc.toString();
  return after === before ? { text, changed: false } : { text: after, changed: true };
}

/** The extraArgs of a section (for checks and snapshots). */
export function clusterConfigurationArgs(text: string, key: Section): Map<string, string> {
  return readSection(parseDocument(text), key).args;
}

/** What `changes` did to one section of the original, set back to the original's values. */
function reverseComponent(
  original: Doc,
  written: Doc,
  key: Section,
  changes: ComponentChanges,
): ComponentChanges {
  const was = readSection(original, key);
  const now = readSection(written, key);
  const flags = Object.fromEntries(
    Object.keys(changes.flags ?? {})
      .filter((name) => was.args.get(name) !== now.args.get(name))
      .map((name) => [name, was.args.get(name) ?? null]),
  );
  const featureGates = Object.fromEntries(
    Object.keys(changes.featureGates ?? {})
      .filter((gate) => featureGate(was.args, gate) !== featureGate(now.args, gate))
      .map((gate) => [gate, featureGate(was.args, gate) ?? null]),
  );
  const addVolumes = was.volumes.filter((v) => !now.volumes.some((k) => isDeepStrictEqual(k, v)));
  return { flags, featureGates, addVolumes };
}

/**
 * The edit that puts back what `edit` changed in `original` (flags, gates, extraVolumes it removed) onto a
 * document changed since: applied to `edit`'s own output it gives `original`'s settings, and it touches
 * nothing else, so the other changes made since are kept.
 */
export function reverseClusterConfigurationEdit(
  original: string,
  edit: ClusterConfigurationEdit,
): ClusterConfigurationEdit {
  const was = parseClusterConfiguration(original);
  const now = parseDocument(editClusterConfiguration(original, edit).text);
  return Object.fromEntries(
    SECTIONS.flatMap((key) => {
      const changes = edit[key];
      return changes ? [[key, reverseComponent(was, now, key, changes)]] : [];
    }),
  );
}

/**
 * How a ClusterConfiguration went back: left alone, given back as the original bytes, or changed since the
 * run and so given back only what the run had changed.
 */
export type Reverted = 'unchanged' | 'original' | 'merged';

/**
 * How the ClusterConfiguration goes back after a run applied `edit` to `original`: untouched when it holds
 * the original already; the original bytes when it still holds exactly what the run wrote; otherwise it
 * was changed since, and only what the run changed is put back ('merged'), every other change kept.
 */
export function revertClusterConfiguration(
  current: string,
  original: string,
  edit: ClusterConfigurationEdit,
): { text: string; how: Reverted } {
  if (current === original) return { text: current, how: 'unchanged' };
  if (current === editClusterConfiguration(original, edit).text) return { text: original, how: 'original' };
  const back = editClusterConfiguration(current, reverseClusterConfigurationEdit(original, edit));
  return back.changed ? { text: back.text, how: 'merged' } : { text: current, how: 'unchanged' };
}
