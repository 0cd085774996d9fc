/**
 * What the golden tests compare between a rendered workload and the upstream reference manifest: flags,
 * image repository, tolerations and RBAC rules, each reduced to a form where only meaning counts (flag
 * order, verb order and list spelling do not).
 */
import { readFileSync } from 'node:fs';
import type { V1ClusterRole, V1Container, V1PodSpec, V1Toleration } from '@kubernetes/client-node';
import { parseAllDocuments } from 'yaml';
import { parseFlags } from '../../lib/controlplane/flags.ts';
import type { KubeObject } from '../../lib/providers/render.ts';
import { REFERENCE_DIR } from '../reference.ts';

export const UPSTREAM = `${REFERENCE_DIR}upstream-manifests`;

/** Every object of an upstream file, `kind: List` items included. */
export function upstreamObjects(file: string): KubeObject[] {
  return parseAllDocuments(readFileSync(`${UPSTREAM}/${file}`, 'utf8'))
    .map((d) => d.toJS() as KubeObject | null)
    .flatMap((o) =>
      o === null ? [] : o.kind === 'List' ? ((o as { items?: KubeObject[] }).items ?? []) : [o],
    );
}

export function find(objects: readonly KubeObject[], kind: string, name: string): KubeObject {
  const o = objects.find((x) => x.kind === kind && x.metadata.name === name);
  if (!o) throw new Error(`no ${kind}/${name}`);
  return o;
}

export function podSpec(workload: KubeObject): V1PodSpec {
  const pod = (workload as { spec?: { template?: { spec?: V1PodSpec } } }).spec?.template?.spec;
  if (!pod) throw new Error(`${workload.kind}/${workload.metadata.name} has no pod template`);
  return pod;
}

export function container(workload: KubeObject, name: string): V1Container {
  const c = podSpec(workload).containers.find((x) => x.name === name);
  if (!c) throw new Error(`${workload.metadata.name} has no container ${name}`);
  return c;
}

/** The flags a container runs with, command and args together, as the binary's pflag reads them. */
export function flagsOf(c: V1Container): Record<string, string> {
  return Object.fromEntries(parseFlags([...(c.command ?? []), ...(c.args ?? [])]));
}

export interface FlagDiff {
  readonly added: Record<string, string>;
  readonly removed: string[];
  readonly changed: Record<string, string>;
}

/** How `ours` differs from `theirs`. */
export function flagDiff(ours: Record<string, string>, theirs: Record<string, string>): FlagDiff {
  const diff: FlagDiff = { added: {}, removed: [], changed: {} };
  for (const [k, v] of Object.entries(ours)) {
    if (!(k in theirs)) diff.added[k] = v;
    else if (theirs[k] !== v) diff.changed[k] = v;
  }
  diff.removed.push(
    ...Object.keys(theirs)
      .filter((k) => !(k in ours))
      .sort(),
  );
  return diff;
}

/** `registry/path` of an image, without tag or digest. */
export function repository(image: string | undefined): string {
  return (image ?? '').replace(/@.*$/, '').replace(/:[^:/]+$/, '');
}

/** A toleration as `key effect` (operator and value aside: both spellings tolerate the same taint). */
export function tolerationKeys(pod: V1PodSpec): string[] {
  return (pod.tolerations ?? []).map((t: V1Toleration) => `${t.key ?? '*'} ${t.effect ?? '*'}`).sort();
}

/** A ClusterRole's rules as atoms `group resource[/name] verb`, sorted and unique. */
export function ruleAtoms(role: KubeObject): string[] {
  const atoms = new Set<string>();
  for (const r of (role as unknown as V1ClusterRole).rules ?? []) {
    for (const g of r.apiGroups ?? [''])
      for (const res of r.resources ?? [])
        for (const name of r.resourceNames?.length ? r.resourceNames : [''])
          for (const v of r.verbs) atoms.add(`${g || 'core'} ${res}${name ? `/${name}` : ''} ${v}`);
  }
  return [...atoms].sort();
}

export function difference(a: readonly string[], b: readonly string[]): string[] {
  return a.filter((x) => !b.includes(x));
}
