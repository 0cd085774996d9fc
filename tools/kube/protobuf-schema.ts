/**
 * `node tools/kube/protobuf-schema.ts`: writes lib/twin/api/protobuf-schema.json, what the in-process twin
 * needs to read a Kubernetes protobuf body (kubectl's typed clients send one: `kubectl create configmap`,
 * `kubectl create deployment`, `kubectl auth can-i`). It is derived from k8s.io/api and
 * k8s.io/apimachinery at API_VERSION (their generated.proto: field numbers, names and types; their
 * types.go: which fields JSON inlines into their parent), keeping only the messages the twin's kinds
 * reach. Run it again after changing API_VERSION or the twin's kinds; it needs the Go module proxy.
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { RESOURCE_TYPES } from '../../lib/twin/resources.ts';

const API_VERSION = 'v0.30.14';
const OUT = fileURLToPath(new URL('../../lib/twin/api/protobuf-schema.json', import.meta.url));

/** Packages read, by the module they are in. */
const PACKAGES: Record<string, string[]> = {
  'k8s.io/api': [
    'core/v1',
    'apps/v1',
    'batch/v1',
    'coordination/v1',
    'rbac/v1',
    'policy/v1',
    'storage/v1',
    'authorization/v1',
    'autoscaling/v1',
  ],
  'k8s.io/apimachinery': [
    'pkg/apis/meta/v1',
    'pkg/runtime',
    'pkg/runtime/schema',
    'pkg/util/intstr',
    'pkg/api/resource',
  ],
};

/** Kinds a kubectl command sends that the twin does not store: answered, not kept. */
const EXTRA_KINDS = ['authorization.k8s.io/v1/SelfSubjectAccessReview', 'autoscaling/v1/Scale'];

/**
 * [number, JSON name, type, flags]: flags has r (repeated), i (inlined into the parent in JSON), z (a zero
 * value is kept: a pointer, or a field JSON writes even when empty; any other zero Go leaves out).
 */
type Field = [number, string, string, string];

function moduleDir(module: string): string {
  const out = execFileSync('go', ['mod', 'download', '-json', `${module}@${API_VERSION}`], {
    encoding: 'utf8',
  });
  return (JSON.parse(out) as { Dir: string }).Dir;
}

/** What the Go structs say of their protobuf fields, by `Struct.protoName`: inlined in JSON, or zero kept. */
function goFields(dir: string): { inline: Set<string>; keepZero: Set<string> } {
  const inline = new Set<string>();
  const keepZero = new Set<string>();
  for (const file of readdirSync(dir).filter((f) => f.endsWith('.go') && !f.endsWith('_test.go'))) {
    let struct = '';
    for (const line of readFileSync(path.join(dir, file), 'utf8').split('\n')) {
      const s = /^type (\w+) struct/.exec(line);
      if (s) struct = s[1] as string;
      const f = /^\s*\w*\s+(\S+)\s+`json:"([^"]*)".*protobuf:"[^"]*name=(\w+)/.exec(line);
      if (!f || !struct) continue;
      const [, goType, json, proto] = f as unknown as [string, string, string, string];
      if (json.includes('inline')) inline.add(`${struct}.${proto}`);
      if (goType.startsWith('*') || !json.includes('omitempty')) keepZero.add(`${struct}.${proto}`);
    }
  }
  return { inline, keepZero };
}

function parseProto(text: string, go: ReturnType<typeof goFields>, messages: Map<string, Field[]>): void {
  const pkg = /^package ([\w.]+);/m.exec(text)?.[1] as string;
  let current: { name: string; fields: Field[] } | undefined;
  for (const raw of text.split('\n')) {
    const line = raw.replace(/\/\/.*$/, '').trim();
    const message = /^message (\w+) \{/.exec(line);
    if (message) {
      current = { name: message[1] as string, fields: [] };
      continue;
    }
    if (line === '}' && current) {
      messages.set(`${pkg}.${current.name}`, current.fields);
      current = undefined;
      continue;
    }
    if (!current) continue;
    const map = /^map<(\S+), ?(\S+)> (\w+) = (\d+);/.exec(line);
    const field = /^(optional|repeated) (\S+) (\w+) = (\d+);/.exec(line);
    const qualify = (t: string): string =>
      /^(string|bytes|bool|int32|int64|uint32|uint64|double|float|fixed64|fixed32)$/.test(t) ||
      t.includes('.')
        ? t
        : `${pkg}.${t}`;
    if (map) {
      current.fields.push([
        Number(map[4]),
        map[3] as string,
        `map<${qualify(map[1] as string)},${qualify(map[2] as string)}>`,
        '',
      ]);
    } else if (field) {
      const key = `${current.name}.${field[3]}`;
      const flags = `${field[1] === 'repeated' ? 'r' : ''}${go.inline.has(key) ? 'i' : ''}${go.keepZero.has(key) ? 'z' : ''}`;
      current.fields.push([Number(field[4]), field[3] as string, qualify(field[2] as string), flags]);
    }
  }
}

function main(): void {
  const messages = new Map<string, Field[]>();
  for (const [module, packages] of Object.entries(PACKAGES)) {
    const dir = moduleDir(module);
    for (const p of packages) {
      parseProto(
        readFileSync(path.join(dir, p, 'generated.proto'), 'utf8'),
        goFields(path.join(dir, p)),
        messages,
      );
    }
  }
  const fqn = (apiVersion: string, kind: string): string => {
    const [group, version] = apiVersion.includes('/') ? apiVersion.split('/') : ['core', apiVersion];
    return `k8s.io.api.${(group as string).replace('.k8s.io', '').replace('rbac.authorization', 'rbac')}.${version}.${kind}`;
  };
  const kinds: Record<string, string> = {};
  for (const t of RESOURCE_TYPES) {
    const apiVersion = t.group ? `${t.group}/${t.version}` : t.version;
    kinds[`${apiVersion}/${t.kind}`] = fqn(apiVersion, t.kind);
  }
  for (const k of EXTRA_KINDS) {
    const kind = k.split('/').pop() as string;
    kinds[k] = fqn(k.slice(0, -kind.length - 1), kind);
  }
  // Only what the kinds reach.
  const keep = new Map<string, Field[]>();
  const visit = (name: string): void => {
    if (keep.has(name)) return;
    const fields = messages.get(name);
    if (!fields) return;
    keep.set(name, fields);
    for (const [, , type] of fields) for (const t of type.replace(/^map<|>$/g, '').split(',')) visit(t);
  };
  for (const name of [...Object.values(kinds), 'k8s.io.apimachinery.pkg.runtime.Unknown']) {
    if (!messages.has(name)) throw new Error(`no message ${name}`);
    visit(name);
  }
  const out = {
    source: `k8s.io/api and k8s.io/apimachinery ${API_VERSION}`,
    kinds,
    messages: Object.fromEntries([...keep].sort()),
  };
  writeFileSync(OUT, `${JSON.stringify(out)}\n`);
  console.log(`${OUT}: ${Object.keys(kinds).length} kinds, ${keep.size} messages`);
}

main();
