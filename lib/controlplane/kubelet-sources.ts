/**
 * Where a node keeps its kubelet's flags, and how to change them there. Pure functions over the files'
 * texts: the node agent reads the files and writes back what changed. A host may give its kubelet flags
 * from elsewhere (a drop-in's own ExecStart): preflight compares the running kubelet's command line with
 * these files and refuses such a node.
 *
 * kubeadm's systemd drop-in (10-kubeadm.conf) runs
 *   ExecStart=/usr/bin/kubelet … $KUBELET_KUBEADM_ARGS $KUBELET_EXTRA_ARGS
 * with KUBELET_KUBEADM_ARGS from /var/lib/kubelet/kubeadm-flags.env (written by kubeadm init/join) and
 * KUBELET_EXTRA_ARGS from /etc/default/kubelet (deb packages) or /etc/sysconfig/kubelet (rpm packages);
 * later flags win, as pflag reads them. kops' unit reads DAEMON_ARGS from /etc/sysconfig/kubelet instead.
 * Feature gates may also sit in the KubeletConfiguration's featureGates map; flags win over it gate by gate
 * (cmd/kubelet/app/server.go, kubeletConfigFlagPrecedence).
 */
import { isMap, isScalar, type Pair, type Scalar, type YAMLMap } from 'yaml';
import { InvalidInputError } from '../errors.ts';
import {
  type ArgEdit,
  flagValues,
  parseFlags,
  planFlagChanges,
  readEnvArgs,
  readEnvVar,
  setFeatureGates,
  writeEnvVar,
} from './flags.ts';
import {
  applyTextEdits,
  mappingRemovals,
  parseYamlDocument,
  replaceNodeText,
  type TextEdit,
} from './static-pod.ts';

export const KUBEADM_FLAGS_FILE = '/var/lib/kubelet/kubeadm-flags.env';
export const KUBELET_CONFIG_FILE = '/var/lib/kubelet/config.yaml';

export interface KubeletFlagSource {
  readonly path: string;
  /** The environment variable of the file that carries the flags. */
  readonly variable: string;
}

/** In the order the kubelet reads them: a later source wins over an earlier one. */
export const KUBELET_FLAG_SOURCES: readonly KubeletFlagSource[] = [
  { path: KUBEADM_FLAGS_FILE, variable: 'KUBELET_KUBEADM_ARGS' },
  { path: '/etc/default/kubelet', variable: 'KUBELET_EXTRA_ARGS' },
  { path: '/etc/sysconfig/kubelet', variable: 'KUBELET_EXTRA_ARGS' },
  { path: '/etc/sysconfig/kubelet', variable: 'DAEMON_ARGS' },
];

/** Every file the kubelet's flags and feature gates come from. */
export const KUBELET_FILES: readonly string[] = [
  ...new Set([...KUBELET_FLAG_SOURCES.map((s) => s.path), KUBELET_CONFIG_FILE]),
];

/** Where systemd looks for unit files, first wins (systemd.unit(5), system units). */
export const SYSTEMD_UNIT_DIRS: readonly string[] = [
  '/etc/systemd/system',
  '/run/systemd/system',
  '/usr/lib/systemd/system',
  '/lib/systemd/system',
];

export function isKubeletFlagFile(path: string): boolean {
  return KUBELET_FLAG_SOURCES.some((s) => s.path === path);
}

/** File texts by host path; undefined (or absent) for a file the node does not have. */
export type KubeletFiles = Readonly<Record<string, string | undefined>>;

export interface KubeletChanges {
  /** A flag's new value; `null` removes it from every source. */
  readonly flags?: Readonly<Record<string, string | null>>;
  /** A gate's new value, in `--feature-gates` or the config's featureGates; `null` removes it. */
  readonly featureGates?: Readonly<Record<string, boolean | null>>;
}

export interface KubeletFileEdit {
  /** The file after the change; undefined for a file that does not exist and was not created. */
  readonly text: string | undefined;
  readonly changed: boolean;
}

/** The flags one file gives the kubelet, every variable it carries in source order. */
export function kubeletFileArgs(path: string, text: string | undefined): string[] {
  return KUBELET_FLAG_SOURCES.filter((s) => s.path === path).flatMap((s) =>
    readEnvArgs(text ?? '', s.variable),
  );
}

function configFeatureGates(text: string): { map: YAMLMap<Scalar, Scalar>; pair: Pair } | undefined {
  const doc = parseYamlDocument(text);
  if (!isMap(doc.contents) || doc.get('kind') !== 'KubeletConfiguration') {
    throw new InvalidInputError('not a KubeletConfiguration');
  }
  const pair = (doc.contents.items as Pair<Scalar>[]).find((p) => p.key?.value === 'featureGates');
  return pair && isMap(pair.value) ? { map: pair.value as YAMLMap<Scalar, Scalar>, pair } : undefined;
}

/** The config file's featureGates as `A=true,B=false`, or undefined when it sets none. */
export function kubeletConfigGates(text: string): string | undefined {
  const gates = configFeatureGates(text)?.map.items ?? [];
  const entries = gates.map((p) => `${p.key?.value}=${isScalar(p.value) ? p.value.value : ''}`);
  return entries.length > 0 ? entries.join(',') : undefined;
}

/** Refused files name themselves: the agent passes the message on without the file's content. */
function inFile<T>(path: string, read: () => T): T {
  try {
    return read();
  } catch (err) {
    if (err instanceof InvalidInputError) throw new InvalidInputError(`${path}: ${err.message}`);
    throw err;
  }
}

/**
 * The flags the kubelet starts with from these files (the drop-in's own --config/--kubeconfig aside), by
 * name; repeated `--feature-gates` and the config's featureGates merged into one `feature-gates`.
 */
export function effectiveKubeletFlags(files: KubeletFiles): Map<string, string> {
  const args = kubeletSourceArgs(files);
  const flags = parseFlags(args);
  const config = files[KUBELET_CONFIG_FILE];
  const fromConfig =
    config === undefined ? undefined : inFile(KUBELET_CONFIG_FILE, () => kubeletConfigGates(config));
  const gates = [fromConfig ?? '', ...flagValues(args, 'feature-gates')].filter((g) => g !== '');
  if (gates.length > 0) flags.set('feature-gates', gates.join(','));
  return flags;
}

/** The kubelet flags the migration changes or relies on: where they come from must be a file it edits. */
export const KUBELET_CHECKED_FLAGS = [
  'cloud-provider',
  'cloud-config',
  'hostname-override',
  // The image credential flags the flip sets or removes (providers/image-credentials.ts).
  'azure-container-registry-config',
  'image-credential-provider-config',
  'image-credential-provider-bin-dir',
] as const;

/** Every value each checked flag is given in `args`, in order (flags not given left out). */
export function checkedKubeletFlags(args: readonly string[]): Record<string, string[]> {
  return Object.fromEntries(
    KUBELET_CHECKED_FLAGS.map((f) => [f, flagValues(args, f)] as const).filter(([, v]) => v.length > 0),
  );
}

/** The flags these files give the kubelet, in the order it reads them. */
export function kubeletSourceArgs(files: KubeletFiles): string[] {
  return KUBELET_FLAG_SOURCES.flatMap((s) => readEnvArgs(files[s.path] ?? '', s.variable));
}

/** The --hostname-override these files give the kubelet, if any. */
export function hostnameOverrideOf(files: KubeletFiles): string | undefined {
  return parseFlags(kubeletSourceArgs(files)).get('hostname-override');
}

/**
 * The --node-ip the kubelet starts with after a restart: the flag files' (the last value wins), else the
 * running command line's, where it came from a source the flip does not touch (a drop-in's ExecStart).
 */
export function nodeIPAfterRestart(
  files: KubeletFiles,
  running: readonly string[] | undefined,
): string | undefined {
  return (
    parseFlags(kubeletSourceArgs(files)).get('node-ip') ?? (running && parseFlags(running).get('node-ip'))
  );
}

/**
 * The Node name of a kubelet off the in-tree provider (cmd/kubelet/app/server.go, nodeutil.GetHostname):
 * --hostname-override, else the host's name, trimmed and lowercased. In-tree AWS and OpenStack named it
 * after the instance instead, so the two can differ once the provider is external.
 */
export function externalNodeName(hostname: string, hostnameOverride: string | undefined): string {
  return (hostnameOverride?.trim() || hostname).trim().toLowerCase();
}

/**
 * Apply list edits to the words of a variable's value, keeping the whitespace between the words that stay
 * (systemd splits an unbraced `$VAR` at whitespace, so only the words matter to the kubelet).
 */
function editWords(value: string, edits: readonly ArgEdit[]): string {
  const words = [...value.matchAll(/\S+/g)].map((m) => ({ start: m.index, end: m.index + m[0].length }));
  const items = words.map((w, i) => ({
    text: value.slice(w.start, w.end),
    sep: value.slice(w.end, words[i + 1]?.start ?? w.end),
  }));
  const out: { text: string; sep: string }[] = [];
  let next = 0;
  const copyUpTo = (end: number): void => {
    for (; next < end; next++) out.push(items[next] as { text: string; sep: string });
  };
  for (const edit of edits) {
    if (edit.kind === 'insert') {
      copyUpTo(edit.before);
      out.push({ text: edit.arg, sep: ' ' });
    } else {
      copyUpTo(edit.index);
      if (edit.kind === 'replace') out.push({ text: edit.arg, sep: items[edit.index]?.sep ?? ' ' });
      next = edit.index + 1;
    }
  }
  copyUpTo(items.length);
  const lead = value.slice(0, words[0]?.start ?? value.length);
  const trail = value.slice(words.at(-1)?.end ?? value.length);
  const body = out.map((w, i) => (i < out.length - 1 ? w.text + (w.sep || ' ') : w.text)).join('');
  return words.length === 0 ? `${lead}${body}` : `${lead}${body}${trail}`;
}

/** Where a flag that no source gives goes: kubeadm-flags.env, or DAEMON_ARGS on a kops node. */
function newFlagSource(files: KubeletFiles): KubeletFlagSource {
  const kops = KUBELET_FLAG_SOURCES.find((s) => s.variable === 'DAEMON_ARGS');
  if (
    files[KUBEADM_FLAGS_FILE] === undefined &&
    kops &&
    readEnvVar(files[kops.path] ?? '', kops.variable) !== undefined
  ) {
    return kops;
  }
  return KUBELET_FLAG_SOURCES[0] as KubeletFlagSource;
}

/**
 * Change kubelet flags wherever the node keeps them. A flag that is set is rewritten in every source that
 * gives it, or added to kubeadm-flags.env (creating the variable or the file) when none does; a removed
 * flag goes from every source. Feature gates likewise, the config file's featureGates counting as a source
 * that is only ever edited, never added to. Every byte outside the changed values is kept; an edit already
 * in effect changes nothing. Throws InvalidInputError naming the file for a config file it cannot read.
 */
export function editKubeletSources(
  files: KubeletFiles,
  changes: KubeletChanges,
): Record<string, KubeletFileEdit> {
  const flagChanges = changes.flags ?? {};
  const gateChanges = changes.featureGates ?? {};
  const config = files[KUBELET_CONFIG_FILE];
  const configGates =
    config !== undefined && Object.keys(gateChanges).length > 0
      ? inFile(KUBELET_CONFIG_FILE, () => configFeatureGates(config))
      : undefined;
  const argsOf = (s: KubeletFlagSource): string[] => readEnvArgs(files[s.path] ?? '', s.variable);
  const gatesOf = (s: KubeletFlagSource): string => flagValues(argsOf(s), 'feature-gates').join(',');
  const gives = (s: KubeletFlagSource, name: string): boolean => parseFlags(argsOf(s)).has(name);
  const gateIn = (gates: string, name: string): boolean =>
    gates.split(',').some((e) => e.split('=')[0]?.trim() === name);
  const configHas = (name: string): boolean =>
    configGates?.map.items.some((p) => p.key?.value === name) ?? false;
  const target = newFlagSource(files);

  const texts = new Map(KUBELET_FILES.map((p) => [p, files[p]]));
  for (const source of KUBELET_FLAG_SOURCES) {
    const isTarget = source === target;
    const own: Record<string, string | null> = Object.fromEntries(
      Object.entries(flagChanges).filter(
        ([name, value]) =>
          value === null ||
          gives(source, name) ||
          (isTarget && !KUBELET_FLAG_SOURCES.some((s) => gives(s, name))),
      ),
    );
    const ownGates = Object.fromEntries(
      Object.entries(gateChanges).filter(
        ([name, value]) =>
          value === null ||
          gateIn(gatesOf(source), name) ||
          (isTarget && !configHas(name) && !KUBELET_FLAG_SOURCES.some((s) => gateIn(gatesOf(s), name))),
      ),
    );
    if (!Object.hasOwn(own, 'feature-gates') && Object.keys(ownGates).length > 0) {
      const base = gatesOf(source);
      const next = setFeatureGates(base, ownGates);
      if (next !== base) own['feature-gates'] = next === '' ? null : next;
    }
    const text = texts.get(source.path);
    const value = readEnvVar(text ?? '', source.variable);
    const plan = planFlagChanges(argsOf(source), own);
    if (plan.length === 0) continue;
    texts.set(source.path, writeEnvVar(text ?? '', source.variable, editWords(value ?? '', plan)));
  }

  if (config !== undefined && configGates) {
    const edits: TextEdit[] = [];
    const removed = new Set<string>();
    for (const p of configGates.map.items) {
      const name = String(p.key?.value);
      if (!Object.hasOwn(gateChanges, name)) continue;
      const value = gateChanges[name];
      if (value === null) removed.add(name);
      else if (isScalar(p.value) && p.value.value !== value)
        edits.push(replaceNodeText(p.value, String(value)));
    }
    const removals = mappingRemovals(config, configGates.map, removed, configGates.pair);
    if (!removals)
      throw new InvalidInputError(
        `${KUBELET_CONFIG_FILE}: featureGates has a layout the agent does not edit`,
      );
    texts.set(KUBELET_CONFIG_FILE, applyTextEdits(config, [...edits, ...removals]));
  }

  return Object.fromEntries(
    KUBELET_FILES.map((p) => [p, { text: texts.get(p), changed: texts.get(p) !== files[p] }]),
  );
}
