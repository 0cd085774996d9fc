/**
 * How the twin's binaries read their command lines, in the manner of spf13/pflag as the Kubernetes
 * components use it (the twin's own reading: it shares no parser with the product, whose bugs it would
 * then hide):
 * - `--name=value`; `--name value` for a flag that takes a value; a boolean flag alone means true;
 * - a later occurrence of a flag replaces an earlier one, except `--feature-gates`, a map every occurrence
 *   adds to (component-base/featuregate: later entries win gate by gate);
 * - a word that is not a flag is an argument, which none of the components takes.
 */

/** Boolean flags of the kubelet and control-plane components that specs may give without a value. */
const BOOLEAN_FLAGS = new Set([
  'allocate-node-cidrs',
  'allow-privileged',
  'anonymous-auth',
  'cgroups-per-qos',
  'configure-cloud-routes',
  'enable-admission-plugins-defaults',
  'enable-aggregator-routing',
  'enable-bootstrap-token-auth',
  'enable-debugging-handlers',
  'enable-leader-migration',
  'enable-server',
  'fail-swap-on',
  'leader-elect',
  'logtostderr',
  'make-iptables-util-chains',
  'profiling',
  'protect-kernel-defaults',
  'register-node',
  'register-schedulable',
  'rotate-certificates',
  'rotate-server-certificates',
  'serialize-image-pulls',
  'use-service-account-credentials',
]);

export interface CommandLine {
  /** Each flag's value, in the order flags were first given. */
  readonly flags: ReadonlyMap<string, string>;
  /** Words that are not flags (after the program name). */
  readonly args: readonly string[];
}

function mergeGates(before: string | undefined, added: string): string {
  const gates = new Map<string, string>();
  for (const list of [before ?? '', added]) {
    for (const entry of list.split(',')) {
      const at = entry.indexOf('=');
      if (at > 0) gates.set(entry.slice(0, at).trim(), entry.slice(at + 1).trim());
    }
  }
  return [...gates].map(([k, v]) => `${k}=${v}`).join(',');
}

/** The flags and arguments of `words`, the program name not included. */
export function readCommandLine(words: readonly string[]): CommandLine {
  const flags = new Map<string, string>();
  const args: string[] = [];
  for (let i = 0; i < words.length; i++) {
    const word = words[i] as string;
    if (!word.startsWith('-') || word === '-' || word === '--') {
      if (word !== '--') args.push(word);
      continue;
    }
    const body = word.replace(/^--?/, '');
    const eq = body.indexOf('=');
    const name = eq < 0 ? body : body.slice(0, eq);
    let value: string;
    if (eq >= 0) value = body.slice(eq + 1);
    else if (BOOLEAN_FLAGS.has(name) || i + 1 >= words.length) value = 'true';
    else value = words[++i] as string;
    flags.set(name, name === 'feature-gates' ? mergeGates(flags.get(name), value) : value);
  }
  return { flags, args };
}

/** A flag read as pflag's boolean: `true`/`1`/`t` and the like; `fallback` when absent or unreadable. */
export function flagIsTrue(flags: ReadonlyMap<string, string>, name: string, fallback: boolean): boolean {
  const value = flags.get(name)?.toLowerCase();
  if (value === undefined) return fallback;
  if (['1', 't', 'true'].includes(value)) return true;
  if (['0', 'f', 'false'].includes(value)) return false;
  return fallback;
}

/** A feature gate's value in `--feature-gates`, or undefined when the flag does not set it. */
export function gateValue(flags: ReadonlyMap<string, string>, gate: string): boolean | undefined {
  const entry = (flags.get('feature-gates') ?? '')
    .split(',')
    .map((e) => e.split('=').map((s) => s.trim()))
    .findLast(([k]) => k === gate);
  const value = entry?.[1]?.toLowerCase();
  return value === 'true' ? true : value === 'false' ? false : undefined;
}
