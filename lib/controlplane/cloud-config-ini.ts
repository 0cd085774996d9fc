/**
 * The INI subset of in-tree cloud configs (read by gcfg, git-config syntax): `[Section]` or
 * `[Section "sub"]` headers, `key = value` (or a bare `key`) lines, `#`/`;` comments and blank lines.
 * Edits keep every untouched line byte for byte, so a translated file differs from its original only where
 * the translation says. Anything else (a key before any section, a continuation line, an unclosed header)
 * is refused naming the line number, never the line: a cloud config can hold credentials.
 */
import { InvalidInputError } from '../errors.ts';

type Line =
  | { readonly kind: 'key'; readonly key: string; readonly value: string; readonly raw: string }
  | { readonly kind: 'other'; readonly raw: string };

interface Section {
  /** As written inside the brackets, without them. */
  readonly name: string;
  readonly header: string;
  lines: Line[];
}

export interface IniDocument {
  /** Comments and blank lines before the first section. */
  readonly preamble: string[];
  readonly sections: Section[];
  readonly finalNewline: boolean;
}

const HEADER = /^\s*\[\s*([A-Za-z0-9][A-Za-z0-9._-]*(?:\s+"[^"\\]*")?)\s*\]\s*(?:[#;].*)?$/;
const KEY = /^\s*([A-Za-z][A-Za-z0-9-]*)\s*(?:=([^\n]*))?$/;
const IGNORED = /^\s*(?:[#;].*)?$/;

/** A value as gcfg reads it: trimmed, without a trailing comment, or inside the quotes of a quoted one. */
function unquote(value: string): string {
  const quoted = /^\s*"([^"\\]*)"\s*(?:[#;][^\n]*)?$/.exec(value);
  return quoted ? (quoted[1] as string) : value.replace(/[#;][^\n]*$/, '').trim();
}

export function parseIni(text: string): IniDocument {
  const finalNewline = text.endsWith('\n');
  const rows = (finalNewline ? text.slice(0, -1) : text).split('\n');
  const doc: IniDocument = { preamble: [], sections: [], finalNewline };
  rows.forEach((raw, i) => {
    const section = doc.sections.at(-1);
    if (IGNORED.test(raw)) {
      if (section) section.lines.push({ kind: 'other', raw });
      else doc.preamble.push(raw);
      return;
    }
    const header = HEADER.exec(raw);
    if (header) {
      doc.sections.push({ name: header[1] as string, header: raw, lines: [] });
      return;
    }
    const key = KEY.exec(raw);
    // gcfg reads a trailing backslash as a continuation: refused rather than half understood.
    if (!key || !section || raw.trimEnd().endsWith('\\')) {
      throw new InvalidInputError(
        `line ${i + 1} is not an INI section header, key or comment${section ? '' : ' (or comes before any section)'}`,
      );
    }
    section.lines.push({ kind: 'key', key: key[1] as string, value: unquote(key[2] ?? ''), raw });
  });
  return doc;
}

export function serializeIni(doc: IniDocument): string {
  const rows = [...doc.preamble, ...doc.sections.flatMap((s) => [s.header, ...s.lines.map((l) => l.raw)])];
  return rows.join('\n') + (doc.finalNewline ? '\n' : '');
}

/** gcfg matches section and key names case-insensitively. */
const same = (a: string, b: string) => a.toLowerCase() === b.toLowerCase();

export function findSection(doc: IniDocument, name: string): Section | undefined {
  return doc.sections.find((s) => same(s.name, name));
}

/** The last value of `key` in the section (gcfg keeps the last of a single-valued key). */
export function getKey(section: Section, key: string): string | undefined {
  const line = section.lines.findLast((l) => l.kind === 'key' && same(l.key, key));
  return line?.kind === 'key' ? line.value : undefined;
}

export function deleteKey(section: Section, key: string): void {
  section.lines = section.lines.filter((l) => !(l.kind === 'key' && same(l.key, key)));
}

/** Set `key` to `value`: in place of its first occurrence, else after the section's last key. */
export function setKey(section: Section, key: string, value: string): void {
  const line: Line = { kind: 'key', key, value, raw: `${key} = ${value}` };
  const first = section.lines.findIndex((l) => l.kind === 'key' && same(l.key, key));
  if (first >= 0) {
    deleteKey(section, key);
    section.lines.splice(first, 0, line);
    return;
  }
  const lastKey = section.lines.findLastIndex((l) => l.kind === 'key');
  section.lines.splice(lastKey + 1, 0, line);
}

export function deleteSection(doc: IniDocument, name: string): void {
  const kept = doc.sections.filter((s) => !same(s.name, name));
  doc.sections.splice(0, doc.sections.length, ...kept);
}
