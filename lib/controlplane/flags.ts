/**
 * Command-line flags of the control-plane binaries, as they sit in node files: the `command`/`args` of a
 * static pod container (`--name=value` list) and the kubelet's environment files
 * (`KUBELET_KUBEADM_ARGS="--a=b --c=d"` in /var/lib/kubelet/kubeadm-flags.env, `KUBELET_EXTRA_ARGS=` in
 * /etc/default/kubelet). Pure functions: the twin's kubelet reads with them and the node agent rewrites
 * with them, changing only what it must.
 */

/** One flag occurrence in an argument list: tokens [start, end) of the list. */
interface FlagToken {
  readonly name: string;
  readonly value: string;
  readonly start: number;
  readonly end: number;
}

/**
 * Boolean flags of the control-plane binaries that this product reads. pflag never takes the next word as
 * a boolean's value: `--leader-elect false` is `--leader-elect=true` followed by a stray argument.
 */
const BOOLEAN_FLAGS: ReadonlySet<string> = new Set([
  'leader-elect',
  'enable-leader-migration',
  'allocate-node-cidrs',
  'configure-cloud-routes',
]);

/** strconv.ParseBool's true spellings, which pflag uses for `--flag=value`. */
const TRUE_SPELLINGS: ReadonlySet<string> = new Set(['1', 't', 'T', 'true', 'TRUE', 'True']);

/**
 * The flags of an argument list in order. Accepts `--name=value`, `--name value` (pflag's form for
 * non-boolean flags; taken when the next token is not itself a flag) and a bare `--name` (a boolean, "true").
 * Tokens that are not flags (the binary name) are skipped.
 */
function tokenize(args: readonly string[]): FlagToken[] {
  const out: FlagToken[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] as string;
    const m = /^--?([^=\s-][^=\s]*)(?:=([\s\S]*))?$/.exec(arg);
    if (!m || arg === '--') continue;
    const name = m[1] as string;
    if (m[2] !== undefined) {
      out.push({ name, value: m[2], start: i, end: i + 1 });
      continue;
    }
    const next = args[i + 1];
    if (next !== undefined && !next.startsWith('-') && !BOOLEAN_FLAGS.has(name)) {
      out.push({ name, value: next, start: i, end: i + 2 });
      i++;
    } else {
      out.push({ name, value: 'true', start: i, end: i + 1 });
    }
  }
  return out;
}

/** Flags by name; a flag given twice takes its last value, as pflag does. */
export function parseFlags(args: readonly string[]): Map<string, string> {
  const flags = new Map<string, string>();
  for (const t of tokenize(args)) flags.set(t.name, t.value);
  return flags;
}

/** A boolean flag's value as pflag reads it; `fallback` when the flag is absent. */
export function booleanFlag(flags: ReadonlyMap<string, string>, name: string, fallback: boolean): boolean {
  const value = flags.get(name);
  return value === undefined ? fallback : TRUE_SPELLINGS.has(value);
}

/** `--name=value`: the form kubeadm writes. */
export function formatFlag(name: string, value: string): string {
  return `--${name}=${value}`;
}

/** Flags as `--name=value` arguments, in the map's order. */
export function formatFlags(flags: ReadonlyMap<string, string>): string[] {
  return [...flags].map(([name, value]) => formatFlag(name, value));
}

/** One change to an argument list, by index into the list as it was. */
export type ArgEdit =
  | { readonly kind: 'replace'; readonly index: number; readonly arg: string }
  | { readonly kind: 'delete'; readonly index: number }
  /** A new argument before `before` (the list's length: at the end). */
  | { readonly kind: 'insert'; readonly before: number; readonly arg: string };

/**
 * The edits setFlags makes, in list order (an insertion before index i comes before any edit of i), so
 * that an editor of the list's source text (a YAML sequence, an environment variable) can apply them in
 * place. A flag already given once with its wanted value, in any spelling, is left as it is: an edit that
 * is already in effect changes nothing.
 */
export function planFlagChanges(
  args: readonly string[],
  changes: Readonly<Record<string, string | null>>,
): ArgEdit[] {
  const tokens = tokenize(args);
  const edits: ArgEdit[] = [];
  const pending = Object.entries(changes)
    .filter(([name, value]) => value !== null && !tokens.some((t) => t.name === name))
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)) as [string, string][];
  const settled = new Set(
    Object.entries(changes)
      .filter(([name, value]) => {
        const given = tokens.filter((t) => t.name === name);
        return value !== null && given.length === 1 && given[0]?.value === value;
      })
      .map(([name]) => name),
  );
  const written = new Set<string>();
  for (const token of tokens) {
    while (pending.length > 0 && (pending[0] as [string, string])[0] < token.name) {
      const [name, value] = pending.shift() as [string, string];
      edits.push({ kind: 'insert', before: token.start, arg: formatFlag(name, value) });
    }
    const change = Object.hasOwn(changes, token.name) ? changes[token.name] : undefined;
    if (change === undefined || settled.has(token.name)) continue;
    const keep = change !== null && !written.has(token.name);
    if (keep) {
      edits.push({ kind: 'replace', index: token.start, arg: formatFlag(token.name, change) });
      written.add(token.name);
    }
    for (let i = keep ? token.start + 1 : token.start; i < token.end; i++)
      edits.push({ kind: 'delete', index: i });
  }
  for (const [name, value] of pending)
    edits.push({ kind: 'insert', before: args.length, arg: formatFlag(name, value) });
  return edits;
}

/** Apply planned edits to the list they were planned for. */
export function applyArgEdits(args: readonly string[], edits: readonly ArgEdit[]): string[] {
  const out: string[] = [];
  let next = 0;
  const copyUpTo = (end: number): void => {
    for (; next < end; next++) out.push(args[next] as string);
  };
  for (const edit of edits) {
    if (edit.kind === 'insert') {
      copyUpTo(edit.before);
      out.push(edit.arg);
    } else {
      copyUpTo(edit.index);
      if (edit.kind === 'replace') out.push(edit.arg);
      next = edit.index + 1;
    }
  }
  copyUpTo(args.length);
  return out;
}

/**
 * Change flags in an argument list: a string sets the flag (its first occurrence is rewritten in place and
 * later duplicates dropped), `null` removes every occurrence. A new flag goes before the first flag whose
 * name sorts after it, which keeps kubeadm's name-sorted lists sorted (and appends to any other list).
 * Every other argument is kept as it was.
 */
export function setFlags(
  args: readonly string[],
  changes: Readonly<Record<string, string | null>>,
): string[] {
  return applyArgEdits(args, planFlagChanges(args, changes));
}

/** Every value given to `name`, in order (component-base merges repeated `--feature-gates`). */
export function flagValues(args: readonly string[], name: string): string[] {
  return tokenize(args)
    .filter((t) => t.name === name)
    .map((t) => t.value);
}

/** The gates of a `--feature-gates` value (`A=true,B=false`), later entries winning; unparseable ones skipped. */
export function parseFeatureGates(value: string): Map<string, boolean> {
  const gates = new Map<string, boolean>();
  for (const entry of value.split(',')) {
    const [name, raw] = entry.split('=').map((s) => s.trim());
    if (name && raw !== undefined && /^(1|t|T|true|TRUE|True|0|f|F|false|FALSE|False)$/.test(raw)) {
      gates.set(name, TRUE_SPELLINGS.has(raw));
    }
  }
  return gates;
}

/**
 * Change gates in a `--feature-gates` value: a gate already given is rewritten in place (its later
 * duplicates dropped) unless it already has the wanted value, `null` removes every entry of it, and a gate
 * not given is appended when `add` allows. Every other entry is kept as written. '' when no entry is left.
 */
export function setFeatureGates(
  value: string,
  changes: Readonly<Record<string, boolean | null>>,
  opts: { add?: boolean } = {},
): string {
  const entries = value === '' ? [] : value.split(',');
  const nameOf = (entry: string): string => entry.split('=')[0]?.trim() ?? '';
  const current = parseFeatureGates(value);
  const out: string[] = [];
  const done = new Set<string>();
  for (const entry of entries) {
    const name = nameOf(entry);
    const change = Object.hasOwn(changes, name) ? changes[name] : undefined;
    if (change === undefined) out.push(entry);
    else if (change !== null && !done.has(name)) {
      const single = entries.filter((e) => nameOf(e) === name).length === 1;
      out.push(single && current.get(name) === change ? entry : `${name}=${change}`);
      done.add(name);
    }
  }
  if (opts.add ?? true) {
    for (const [name, change] of Object.entries(changes)) {
      if (change !== null && !done.has(name)) out.push(`${name}=${change}`);
    }
  }
  return out.join(',');
}

/**
 * The words systemd makes of an unbraced `$VAR` in ExecStart: the value split at whitespace, quotes not
 * interpreted (systemd.service(5), "Command lines"). The kubeadm drop-in passes the kubelet's flags so.
 */
export function splitArgs(value: string): string[] {
  return value.split(/\s+/).filter((w) => w.length > 0);
}

/** An assignment line of an environment file, with where its value sits in the text. */
interface Assignment {
  readonly value: string;
  /** Offsets of the raw value (quotes included) in the text. */
  readonly valueStart: number;
  readonly valueEnd: number;
  readonly quote: '"' | "'" | '';
}

const UNESCAPE: Record<string, string> = { n: '\n', t: '\t', r: '\r' };

/** Read a quoted value starting at `text[from]` (the quote); undefined when it is not closed on the line. */
function readQuoted(
  text: string,
  from: number,
  quote: '"' | "'",
): { value: string; end: number } | undefined {
  let value = '';
  for (let i = from + 1; i < text.length; i++) {
    const c = text[i] as string;
    if (c === '\n') return undefined;
    if (c === quote) return { value, end: i + 1 };
    if (c === '\\' && quote === '"' && i + 1 < text.length) {
      const n = text[++i] as string;
      value += UNESCAPE[n] ?? n;
    } else {
      value += c;
    }
  }
  return undefined;
}

/**
 * Assignments of `name` in an environment file, with systemd's EnvironmentFile syntax (systemd.exec(5)):
 * `NAME=value` per line, `#`/`;` comment lines, a value in double quotes (backslash escapes) or single
 * quotes, or bare (trimmed). Lines it cannot read are skipped, as systemd skips them.
 */
function assignments(text: string, name: string): Assignment[] {
  const found: Assignment[] = [];
  const line = /^[ \t]*(?:export[ \t]+)?([A-Za-z_][A-Za-z0-9_]*)[ \t]*=[ \t]*(.*)$/gm;
  for (let m = line.exec(text); m; m = line.exec(text)) {
    if (m[1] !== name) continue;
    const raw = m[2] as string;
    const valueStart = m.index + m[0].length - raw.length;
    const first = raw[0];
    if (first === '"' || first === "'") {
      const q = readQuoted(text, valueStart, first);
      if (q) found.push({ value: q.value, valueStart, valueEnd: q.end, quote: first });
      continue;
    }
    const value = raw.replace(/[ \t\r]+$/, '');
    found.push({ value, valueStart, valueEnd: valueStart + value.length, quote: '' });
  }
  return found;
}

/** The value of `name` in an environment file (the last assignment wins), or undefined when it is not set. */
export function readEnvVar(text: string, name: string): string | undefined {
  return assignments(text, name).at(-1)?.value;
}

/** A value written back as kubeadm writes it (Go's %q: double quotes, `\` and `"` escaped). */
function quote(value: string): string {
  return `"${value.replace(/[\\"]/g, (c) => `\\${c}`).replace(/\n/g, '\\n')}"`;
}

/**
 * Set `name` in an environment file. Only the value of its last assignment changes (in the same quoting
 * style, quoted when it must be); every other byte is kept. A file without it gets `NAME="value"` appended.
 */
export function writeEnvVar(text: string, name: string, value: string): string {
  const last = assignments(text, name).at(-1);
  if (!last) {
    const sep = text === '' || text.endsWith('\n') ? '' : '\n';
    return `${text}${sep}${name}=${quote(value)}\n`;
  }
  // A bare value keeps its inner whitespace (systemd strips only the ends), so it stays bare when it can.
  const bare = last.quote === '' && /^(?:[^\s"'\\#;$`](?:[^"'\\#;$`\r\n]*[^\s"'\\#;$`])?)?$/.test(value);
  const single = last.quote === "'" && !value.includes("'") && !value.includes('\n');
  const raw = bare ? value : single ? `'${value}'` : quote(value);
  return text.slice(0, last.valueStart) + raw + text.slice(last.valueEnd);
}

/** The flags an environment variable carries (`KUBELET_KUBEADM_ARGS`), split as systemd splits them. */
export function readEnvArgs(text: string, name: string): string[] {
  return splitArgs(readEnvVar(text, name) ?? '');
}

/** Rewrite the flags an environment variable carries, the rest of the file unchanged. */
export function writeEnvArgs(text: string, name: string, args: readonly string[]): string {
  return writeEnvVar(text, name, args.join(' '));
}
