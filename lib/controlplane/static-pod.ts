/**
 * Reading and rewriting the flags of a static pod manifest (kube-apiserver, kube-controller-manager) as
 * kubeadm, kops or a person wrote it. The manifest is parsed with the `yaml` Document API only to find
 * where things are; changes are spliced into the original text at those positions, so comments, key
 * order, quoting, indentation and line endings of everything untouched stay byte for byte (re-serializing
 * the document would normalize them, and the kubelet restarts a static pod for any byte that changes).
 * Pure functions.
 */
import {
  type Document,
  isMap,
  isScalar,
  isSeq,
  type Node,
  type Pair,
  parseDocument,
  type Scalar,
  stringify,
  type YAMLError,
  type YAMLMap,
  type YAMLSeq,
} from 'yaml';
import type { StaticPodEdit } from '../agent/protocol.ts';
import { InvalidInputError } from '../errors.ts';
import {
  type ArgEdit,
  applyArgEdits,
  flagValues,
  parseFlags,
  planFlagChanges,
  setFeatureGates,
} from './flags.ts';

/** The flags that tie a component to a cloud provider, as the agent reports them. */
export const CLOUD_FLAGS = [
  'cloud-provider',
  'cloud-config',
  'feature-gates',
  'cluster-name',
  'external-cloud-volume-plugin',
  'enable-leader-migration',
  'leader-migration-config',
  'controllers',
  'configure-cloud-routes',
  'allocate-node-cidrs',
  'cluster-cidr',
  'cidr-allocator-type',
] as const;

/** The cloud flags of an argument list; repeated `--feature-gates` merged as component-base merges them. */
export function cloudFlagsOfArgs(args: readonly string[]): Record<string, string> {
  const flags = parseFlags(args);
  const gates = flagValues(args, 'feature-gates');
  if (gates.length > 0) flags.set('feature-gates', gates.join(','));
  const out: Record<string, string> = {};
  for (const name of CLOUD_FLAGS) {
    const value = flags.get(name);
    if (value !== undefined) out[name] = value;
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------------
// Splicing YAML text at the positions the Document API reports (also used for KubeletConfiguration files).

/** Replace [start, end) of the original text with `text` (an insertion when start === end). */
export interface TextEdit {
  readonly start: number;
  readonly end: number;
  readonly text: string;
}

/**
 * Apply edits made against one original text. Insertions at the same offset keep the order given, and an
 * insertion at the start of a removed range lands before what follows it, not inside the removal.
 */
export function applyTextEdits(text: string, edits: readonly TextEdit[]): string {
  const ordered = edits
    .map((edit, order) => ({ edit, order }))
    .sort(
      (a, b) =>
        b.edit.start - a.edit.start ||
        Number(a.edit.start === a.edit.end) - Number(b.edit.start === b.edit.end) ||
        b.order - a.order,
    );
  let out = text;
  let floor = Number.POSITIVE_INFINITY;
  for (const { edit } of ordered) {
    if (edit.end > floor) throw new Error('overlapping text edits');
    out = out.slice(0, edit.start) + edit.text + out.slice(edit.end);
    if (edit.end > edit.start) floor = edit.start;
  }
  return out;
}

/** Parse one YAML document; a syntax error is refused, named by its code and position only (never text). */
export function parseYamlDocument(text: string): Document.Parsed {
  const doc = parseDocument(text, { prettyErrors: false });
  const error = doc.errors[0];
  if (error) throw new InvalidInputError(`not valid YAML (${describeYamlError(text, error)})`);
  return doc;
}

function describeYamlError(text: string, error: YAMLError): string {
  const pos = error.pos[0];
  const line = text.slice(0, pos).split('\n').length;
  return `${error.code} at line ${line}, column ${pos - lineStart(text, pos) + 1}`;
}

function lineStart(text: string, pos: number): number {
  return text.lastIndexOf('\n', pos - 1) + 1;
}

/** The offset after the end of the line holding `pos - 1` (a node's end), newline included. */
function lineEnd(text: string, pos: number): number {
  if (pos > 0 && text[pos - 1] === '\n') return pos;
  const nl = text.indexOf('\n', pos);
  return nl === -1 ? text.length : nl + 1;
}

function rangeOf(node: Node | null | undefined): [number, number, number] {
  const range = node?.range;
  if (!range) throw new Error('YAML node without a source range');
  return range;
}

/** A block collection entry's lines: `<indent>- value` or `<indent>key: value` through its last line. */
function entryLines(
  text: string,
  first: Node,
  last: Node | null,
  dash: boolean,
): [number, number] | undefined {
  const begin = rangeOf(first)[0];
  const start = lineStart(text, begin);
  const prefix = text.slice(start, begin);
  if (!(dash ? /^[ \t]*-[ \t]+$/ : /^[ \t]*$/).test(prefix)) return undefined;
  return [start, lineEnd(text, rangeOf(last ?? first)[2])];
}

/** A new scalar written in the style of its neighbour (double-quoted when plain would change its meaning). */
function renderScalar(value: string, like: Scalar | undefined, inFlow: boolean): string {
  if (like?.type === 'QUOTE_SINGLE' && !value.includes('\n')) return `'${value.replaceAll("'", "''")}'`;
  if (like?.type !== 'QUOTE_DOUBLE') {
    const plain = stringify(value, { lineWidth: 0 }).replace(/\n$/, '') === value;
    if (plain && !(inFlow && /[,[\]{}]/.test(value))) return value;
  }
  return JSON.stringify(value);
}

function eolOf(text: string): string {
  return text.includes('\r\n') ? '\r\n' : '\n';
}

/**
 * Text edits that apply list edits to a sequence of scalars (or remove entries of any sequence), or
 * undefined when its layout is not one this editor can change safely. A block sequence left empty goes
 * with its key (`pair`), when given.
 */
function sequenceEdits(
  text: string,
  seq: YAMLSeq,
  edits: readonly ArgEdit[],
  pair?: Pair,
): TextEdit[] | undefined {
  if (edits.length === 0) return [];
  const items = seq.items as Node[];
  if (seq.flow) return [flowSequenceEdit(text, seq, edits)];
  const out: TextEdit[] = [];
  const eol = eolOf(text);
  const removed = new Set(edits.flatMap((e) => (e.kind === 'delete' ? [e.index] : [])));
  if (removed.size === items.length && !edits.some((e) => e.kind === 'insert')) {
    if (!pair) return undefined;
    const lines = entryLines(text, pair.key as Node, seq, false);
    return lines ? [{ start: lines[0], end: lines[1], text: '' }] : undefined;
  }
  for (const edit of edits) {
    if (edit.kind === 'replace') {
      const item = items[edit.index] as Scalar;
      const [start, end] = rangeOf(item);
      out.push({ start, end, text: renderScalar(edit.arg, item, false) });
    } else if (edit.kind === 'delete') {
      const lines = entryLines(text, items[edit.index] as Node, null, true);
      if (!lines) return undefined;
      out.push({ start: lines[0], end: lines[1], text: '' });
    } else {
      const atEnd = edit.before >= items.length;
      const like = items[atEnd ? items.length - 1 : edit.before] as Scalar | undefined;
      const lines = like && entryLines(text, like, null, true);
      if (!like || !lines) return undefined;
      const line = `${text.slice(lines[0], rangeOf(like)[0])}${renderScalar(edit.arg, like, false)}`;
      if (!atEnd) out.push({ start: lines[0], end: lines[0], text: `${line}${eol}` });
      else if (text.slice(lines[0], lines[1]).endsWith('\n'))
        out.push({ start: lines[1], end: lines[1], text: `${line}${eol}` });
      else out.push({ start: lines[1], end: lines[1], text: `${eol}${line}` });
    }
  }
  return out;
}

/** A flow sequence (`[a, b]`, JSON) rewritten whole, keeping its items' text and its separators. */
function flowSequenceEdit(text: string, seq: YAMLSeq, edits: readonly ArgEdit[]): TextEdit {
  const items = seq.items as Scalar[];
  const [start, end] = rangeOf(seq);
  const sources = items.map((item) => text.slice(rangeOf(item)[0], rangeOf(item)[1]));
  const rendered = applyArgEdits(
    sources,
    edits.map((e) => (e.kind === 'delete' ? e : { ...e, arg: renderScalar(e.arg, items[0], true) })),
  );
  const open = start + 1;
  const close = end - 1;
  const first = items[0];
  const last = items.at(-1);
  const lead = first ? text.slice(open, rangeOf(first)[0]) : '';
  const trail = last ? text.slice(rangeOf(last)[1], close) : '';
  const sep = items.length > 1 ? text.slice(rangeOf(items[0])[1], rangeOf(items[1])[0]) : ', ';
  const body = rendered.length === 0 ? '' : `${lead}${rendered.join(sep)}${trail}`;
  return { start, end, text: `[${body}]` };
}

/** Text edits that remove entries of a mapping (by key); a block mapping left empty goes with its key. */
export function mappingRemovals(
  text: string,
  map: YAMLMap,
  keys: ReadonlySet<string>,
  pair?: Pair,
): TextEdit[] | undefined {
  const pairs = map.items as Pair<Scalar, Node>[];
  const gone = pairs.filter((p) => keys.has(String(p.key?.value)));
  if (gone.length === 0) return [];
  if (map.flow) {
    const kept = pairs
      .filter((p) => !gone.includes(p))
      .map((p) => text.slice(rangeOf(p.key)[0], rangeOf(p.value)[1]));
    const [start, end] = rangeOf(map);
    return [{ start, end, text: kept.length ? `{ ${kept.join(', ')} }` : '{}' }];
  }
  if (gone.length === pairs.length) {
    if (!pair) return undefined;
    const lines = entryLines(text, pair.key as Node, map, false);
    return lines ? [{ start: lines[0], end: lines[1], text: '' }] : undefined;
  }
  const out: TextEdit[] = [];
  for (const p of gone) {
    const lines = entryLines(text, p.key, p.value, false);
    if (!lines) return undefined;
    out.push({ start: lines[0], end: lines[1], text: '' });
  }
  return out;
}

/** Replace a node's text with YAML source written by the caller (`true`, not the string "true"). */
export function replaceNodeText(node: Node, source: string): TextEdit {
  const [start, end] = rangeOf(node);
  return { start, end, text: source };
}

// ---------------------------------------------------------------------------------------------------------
// The static pod.

/** Where the component's flags sit: `seq.items[from..]` of the container's command or args. */
interface Segment {
  readonly seq: YAMLSeq<Scalar>;
  readonly from: number;
  readonly args: readonly string[];
}

interface PodView {
  readonly doc: Document.Parsed;
  readonly spec: YAMLMap;
  readonly container: YAMLMap;
  readonly segments: readonly Segment[];
}

/** The component binary in a command line (`kube-apiserver`, `/usr/local/bin/kube-apiserver` after go-runner). */
const BINARY = /^(kube-[a-z-]+|kubelet|[a-z0-9-]*cloud-controller-manager)$/;

function stringSeq(container: YAMLMap, key: 'command' | 'args', name: string): YAMLSeq<Scalar> | undefined {
  const node = container.get(key, true);
  if (node === undefined || (isScalar(node) && node.value === null)) return undefined;
  if (!isSeq(node) || !node.items.every((i) => isScalar(i) && typeof i.value === 'string')) {
    throw new InvalidInputError(`the ${key} of container ${name} is not a list of strings`);
  }
  return node as YAMLSeq<Scalar>;
}

/**
 * The container that runs the pod's component: the one named after its `component` label (kubeadm) or
 * `k8s-app` label (kops), or the only one. A static pod may carry sidecars (kops' healthcheck, a KMS
 * plugin) in any order; one where neither tells is refused rather than guessed.
 */
function componentContainer(doc: Document.Parsed, items: readonly unknown[]): unknown {
  const labels = doc.getIn(['metadata', 'labels'], true);
  const component = isMap(labels) ? (labels.get('component') ?? labels.get('k8s-app')) : undefined;
  const named = items.find((c) => isMap(c) && c.get('name') === component);
  if (named) return named;
  if (items.length <= 1) return items[0];
  const names = items.map((c) => (isMap(c) ? String(c.get('name')) : '?')).join(', ');
  throw new InvalidInputError(
    `cannot tell which container runs the component: containers ${names}, none named after the component label`,
  );
}

function readPod(text: string): PodView {
  const doc = parseYamlDocument(text);
  if (!isMap(doc.contents) || doc.get('kind') !== 'Pod') throw new InvalidInputError('not a Pod manifest');
  const spec = doc.get('spec', true);
  const containers = isMap(spec) ? spec.get('containers', true) : undefined;
  const container = isSeq(containers) ? componentContainer(doc, containers.items) : undefined;
  if (!isMap(spec) || !isMap(container)) throw new InvalidInputError('a Pod manifest without a container');
  const name = String(container.get('name') ?? '0');
  const command = stringSeq(container, 'command', name);
  const args = stringSeq(container, 'args', name);
  const values = (seq: YAMLSeq<Scalar> | undefined): string[] =>
    (seq?.items ?? []).map((i) => String(i.value));
  const all = [...values(command), ...values(args)];
  const binary = all.findIndex((a) => !a.startsWith('-') && BINARY.test(a.slice(a.lastIndexOf('/') + 1)));
  const segment = (seq: YAMLSeq<Scalar> | undefined, from: number): Segment[] =>
    seq ? [{ seq, from, args: values(seq).slice(from) }] : [];
  const commandLength = command?.items.length ?? 0;
  let segments: Segment[];
  if (binary === -1) {
    // No binary named: only an image entrypoint's arguments can be told apart from the command.
    if (commandLength > 0)
      throw new InvalidInputError(`cannot tell where the flags of container ${name} start`);
    segments = segment(args, 0);
  } else if (binary < commandLength) {
    segments = [...segment(command, binary + 1), ...segment(args, 0)];
  } else {
    segments = segment(args, binary - commandLength + 1);
  }
  return { doc, spec, container, segments };
}

/** The cloud flags of a static pod manifest's first container; throws InvalidInputError for anything else. */
export function cloudFlagsOf(text: string): Record<string, string> {
  return cloudFlagsOfArgs(readPod(text).segments.flatMap((s) => s.args));
}

export interface StaticPodEditResult {
  readonly text: string;
  readonly changed: boolean;
  /** The cloud flags after the edit. */
  readonly flags: Record<string, string>;
}

export type StaticPodChanges = Partial<Omit<StaticPodEdit, 'path'>>;

/** The flag changes an edit amounts to, its feature gate changes folded into `feature-gates`. */
function flagChangesOf(args: readonly string[], edit: StaticPodChanges): Record<string, string | null> {
  const changes: Record<string, string | null> = { ...edit.flags };
  const gates = edit.featureGates ?? {};
  if (Object.keys(gates).length === 0) return changes;
  const explicit = Object.hasOwn(changes, 'feature-gates');
  const base = explicit ? (changes['feature-gates'] ?? '') : flagValues(args, 'feature-gates').join(',');
  const next = setFeatureGates(base, gates);
  if (explicit || next !== base) changes['feature-gates'] = next === '' ? null : next;
  return changes;
}

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

function pairOf(map: YAMLMap, key: string): Pair | undefined {
  return (map.items as Pair<Scalar>[]).find((p) => p.key?.value === key);
}

function mountsVolume(container: unknown, volume: string): boolean {
  const mounts = isMap(container) ? container.get('volumeMounts') : undefined;
  return isSeq(mounts) && mounts.items.some((m) => isMap(m) && m.get('name') === volume);
}

/**
 * The edits that drop the hostPath volume (and its mount) that held `cloudConfig`, or none when a
 * remaining flag still refers to a path under the mount, another container mounts it, or the layout is
 * not one this editor changes safely (the volume is then left: it does no harm).
 */
function cloudConfigVolumeRemovals(
  text: string,
  pod: PodView,
  cloudConfig: string,
  remaining: readonly string[],
): TextEdit[] {
  const mounts = pod.container.get('volumeMounts', true);
  if (!isSeq(mounts)) return [];
  let best: { index: number; path: string; name: string } | undefined;
  mounts.items.forEach((m, index) => {
    const path = isMap(m) ? m.get('mountPath') : undefined;
    const name = isMap(m) ? m.get('name') : undefined;
    if (typeof path !== 'string' || typeof name !== 'string') return;
    const dir = path.endsWith('/') ? path : `${path}/`;
    if ((cloudConfig === path || cloudConfig.startsWith(dir)) && path.length > (best?.path.length ?? -1)) {
      best = { index, path, name };
    }
  });
  if (!best) return [];
  const under = new RegExp(`(^|[=,:\\s])${escapeRegExp(best.path.replace(/\/$/, ''))}(/|,|:|\\s|$)`);
  if (remaining.some((arg) => under.test(arg))) return [];
  const volumes = pod.spec.get('volumes', true);
  if (!isSeq(volumes)) return [];
  const volumeIndex = volumes.items.findIndex((v) => isMap(v) && v.get('name') === best?.name);
  const volume = volumes.items[volumeIndex];
  if (!isMap(volume) || !volume.has('hostPath')) return [];
  const containerSeqs = ['containers', 'initContainers'].map((k) => pod.spec.get(k));
  const users = containerSeqs
    .flatMap((s) => (isSeq(s) ? s.items : []))
    .filter((c) => mountsVolume(c, best?.name ?? ''));
  const mountEdits = sequenceEdits(
    text,
    mounts,
    [{ kind: 'delete', index: best.index }],
    pairOf(pod.container, 'volumeMounts'),
  );
  const volumeEdits =
    users.length > 1
      ? []
      : sequenceEdits(text, volumes, [{ kind: 'delete', index: volumeIndex }], pairOf(pod.spec, 'volumes'));
  return mountEdits && volumeEdits ? [...mountEdits, ...volumeEdits] : [];
}

/**
 * Apply flag and feature gate changes to a static pod manifest's first container (flags in `command`, as
 * kubeadm writes them, or in `args`). A flag that is set is rewritten where it is given, or added among the
 * flags in name order; `null` removes it everywhere. An edit already in effect returns the same text.
 * Throws InvalidInputError (naming the problem, never the text) for a file that is not a Pod manifest with
 * a container.
 */
export function editStaticPod(text: string, edit: StaticPodChanges): StaticPodEditResult {
  const pod = readPod(text);
  const before = pod.segments.flatMap((s) => s.args);
  const changes = flagChangesOf(before, edit);
  const gives = (segment: Segment, name: string): boolean => parseFlags(segment.args).has(name);
  const home = [...pod.segments].reverse().find((s) => parseFlags(s.args).size > 0) ?? pod.segments.at(-1);
  if (!home && Object.values(changes).some((v) => v !== null)) {
    throw new InvalidInputError('the container has neither command nor args to add flags to');
  }
  const edits: TextEdit[] = [];
  const after: string[] = [];
  for (const segment of pod.segments) {
    const own = Object.fromEntries(
      Object.entries(changes).filter(
        ([name, value]) =>
          value === null ||
          gives(segment, name) ||
          (segment === home && !pod.segments.some((s) => gives(s, name))),
      ),
    );
    const plan = planFlagChanges(segment.args, own);
    after.push(...applyArgEdits(segment.args, plan));
    const shifted = plan.map(
      (e): ArgEdit =>
        e.kind === 'insert'
          ? { ...e, before: e.before + segment.from }
          : { ...e, index: e.index + segment.from },
    );
    const textEdits = sequenceEdits(text, segment.seq, shifted);
    if (!textEdits)
      throw new InvalidInputError('the layout of the container’s flag list is not one the agent edits');
    edits.push(...textEdits);
  }
  const cloudConfig = parseFlags(before).get('cloud-config');
  if (edit.dropUnusedCloudConfigVolume && changes['cloud-config'] === null && cloudConfig) {
    edits.push(...cloudConfigVolumeRemovals(text, pod, cloudConfig, after));
  }
  const next = applyTextEdits(text, edits);
  return { text: next, changed: next !== text, flags: cloudFlagsOf(next) };
}
