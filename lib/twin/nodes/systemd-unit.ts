/**
 * The command line systemd starts a service with, read from a node's own unit files the way systemd does
 * (systemd.unit(5), systemd.service(5), systemd.exec(5)):
 * - the unit file from the first of /etc/systemd/system, /run/systemd/system, /usr/lib/systemd/system,
 *   /lib/systemd/system that has it, then every `<unit>.d/*.conf` drop-in of those directories in file-name
 *   order, a drop-in in an earlier directory hiding a same-named one in a later;
 * - in [Service]: `Environment=` assignments (several per line, quoted or not), `EnvironmentFile=` (a
 *   leading `-` lets it be missing), whose values win over `Environment=`'s; `ExecStart=` (an empty one
 *   clears the list, and a simple service keeps one);
 * - in ExecStart, `$VAR` becomes the variable's words and `${VAR}` one word.
 * The twin's kubelet reads its flags through this, so a drop-in that carries flags of its own (or a
 * KUBELET_EXTRA_ARGS in another file) takes effect on the twin as it would on the host.
 */

// The twin's own list, not the product's (lib/controlplane): a shared one would hide a mistake in both.
const UNIT_DIRS = [
  '/etc/systemd/system',
  '/run/systemd/system',
  '/usr/lib/systemd/system',
  '/lib/systemd/system',
];

export type ReadHostFile = (path: string) => string | undefined;
/** Directory listing of the host: file names under an absolute directory ([] when it does not exist). */
export type ListHostDir = (path: string) => readonly string[];

export interface ServiceCommand {
  /** The program and its arguments; empty when no unit gives an ExecStart. */
  readonly argv: readonly string[];
  /** Every unit file and environment file read, in order (what a change to the service must touch). */
  readonly sources: readonly string[];
  /** The process's environment from `Environment=` and `EnvironmentFile=` (the kubelet reads one). */
  readonly environment: ReadonlyMap<string, string>;
  /** Why systemd does not start it, when it does not. */
  readonly problem?: string;
}

/** Logical lines: a trailing backslash joins the next line. */
function logicalLines(text: string): string[] {
  return text.replace(/\\\r?\n/g, ' ').split(/\r?\n/);
}

/** Words of a unit setting's value, quotes removed (systemd's extract_first_word with quotes). */
function unitWords(value: string): string[] {
  const words: string[] = [];
  const re = /"((?:[^"\\]|\\.)*)"|'([^']*)'|(\S+)/g;
  for (const m of value.matchAll(re)) {
    words.push(m[1] !== undefined ? m[1].replace(/\\(.)/g, '$1') : (m[2] ?? m[3] ?? ''));
  }
  return words;
}

/** `KEY=VALUE` lines of an environment file; quotes removed, `#`/`;` lines skipped. */
function environmentFile(text: string): Map<string, string> {
  const vars = new Map<string, string>();
  for (const line of logicalLines(text)) {
    const trimmed = line.trim();
    if (trimmed === '' || trimmed.startsWith('#') || trimmed.startsWith(';')) continue;
    const eq = trimmed.indexOf('=');
    if (eq <= 0) continue;
    const key = trimmed.slice(0, eq).trim();
    const raw = trimmed.slice(eq + 1).trim();
    const quoted = /^"((?:[^"\\]|\\.)*)"$|^'([^']*)'$/.exec(raw);
    const value = quoted ? (quoted[1]?.replace(/\\(.)/g, '$1') ?? quoted[2] ?? '') : raw;
    vars.set(key, value);
  }
  return vars;
}

interface Settings {
  environment: Map<string, string>;
  environmentFiles: { path: string; optional: boolean }[];
  execStart: string[];
}

function readSection(text: string, into: Settings): void {
  let inService = false;
  for (const line of logicalLines(text)) {
    const trimmed = line.trim();
    if (trimmed.startsWith('[')) {
      inService = trimmed === '[Service]';
      continue;
    }
    if (!inService || trimmed.startsWith('#') || trimmed.startsWith(';')) continue;
    const eq = trimmed.indexOf('=');
    if (eq <= 0) continue;
    const key = trimmed.slice(0, eq).trim();
    const value = trimmed.slice(eq + 1).trim();
    if (key === 'Environment') {
      for (const word of unitWords(value)) {
        const at = word.indexOf('=');
        if (at > 0) into.environment.set(word.slice(0, at), word.slice(at + 1));
      }
    } else if (key === 'EnvironmentFile' && value !== '') {
      const optional = value.startsWith('-');
      into.environmentFiles.push({ path: optional ? value.slice(1) : value, optional });
    } else if (key === 'ExecStart') {
      if (value === '') into.execStart = [];
      else into.execStart.push(value);
    }
  }
}

/** ExecStart's words with `$VAR` split into the variable's words and `${VAR}` kept as one. */
function expand(line: string, env: ReadonlyMap<string, string>): string[] {
  const out: string[] = [];
  for (const word of unitWords(line)) {
    const whole = /^\$([A-Za-z_][A-Za-z0-9_]*)$/.exec(word);
    if (whole) {
      out.push(...(env.get(whole[1] as string) ?? '').split(/\s+/).filter(Boolean));
      continue;
    }
    out.push(word.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (_, name: string) => env.get(name) ?? ''));
  }
  // The executable may carry systemd's prefixes (`-`, `@`, `+`, `!`, `:`).
  if (out[0]) out[0] = out[0].replace(/^[-@+!:]+/, '');
  return out;
}

/**
 * The command `unit` starts with on a host. `fallback` stands for a unit file the host does not have (as a
 * package would install it), so a host that keeps only drop-ins still has a service.
 */
export function serviceCommand(
  unit: string,
  read: ReadHostFile,
  list: ListHostDir,
  fallback: string,
): ServiceCommand {
  const sources: string[] = [];
  const settings: Settings = { environment: new Map(), environmentFiles: [], execStart: [] };
  const main = UNIT_DIRS.map((d) => `${d}/${unit}`).find((p) => read(p) !== undefined);
  readSection(main ? (read(main) as string) : fallback, settings);
  if (main) sources.push(main);
  const dropIns = new Map<string, string>();
  for (const dir of UNIT_DIRS) {
    for (const name of list(`${dir}/${unit}.d`)) {
      if (name.endsWith('.conf') && !dropIns.has(name)) dropIns.set(name, `${dir}/${unit}.d/${name}`);
    }
  }
  for (const name of [...dropIns.keys()].sort()) {
    const path = dropIns.get(name) as string;
    readSection(read(path) ?? '', settings);
    sources.push(path);
  }
  const env = new Map(settings.environment);
  for (const file of settings.environmentFiles) {
    const text = read(file.path);
    if (text === undefined && !file.optional) {
      return {
        argv: [],
        sources,
        environment: env,
        problem: `${unit}: Failed to load environment files: ${file.path}`,
      };
    }
    if (text === undefined) continue;
    sources.push(file.path);
    for (const [k, v] of environmentFile(text)) env.set(k, v);
  }
  const last = settings.execStart.at(-1);
  if (last === undefined) {
    return { argv: [], sources, environment: env, problem: `${unit} has no ExecStart= setting` };
  }
  return { argv: expand(last, env), sources, environment: env };
}
