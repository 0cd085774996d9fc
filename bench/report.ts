/**
 * Benchmark rows and how they are printed and saved: each figure with its target and whether it meets it.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import os from 'node:os';

export interface BenchRow {
  readonly name: string;
  readonly value: number;
  readonly unit: string;
  readonly target?: number;
  /** Which side of the target is good. */
  readonly better?: 'lower' | 'higher';
  readonly note?: string;
}

export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2
    ? (sorted[mid] as number)
    : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}

export function meets(row: BenchRow): boolean | undefined {
  if (row.target === undefined) return undefined;
  return row.better === 'higher' ? row.value >= row.target : row.value <= row.target;
}

function fmt(n: number): string {
  if (Number.isInteger(n)) return String(n);
  return Math.abs(n) >= 100 ? n.toFixed(0) : Math.abs(n) >= 10 ? n.toFixed(1) : n.toFixed(3);
}

export function renderTable(rows: readonly BenchRow[]): string {
  const lines = rows.map((r) => {
    const ok = meets(r);
    const target =
      r.target === undefined ? '' : `${r.better === 'higher' ? '≥' : '≤'} ${fmt(r.target)} ${r.unit}`;
    return [
      r.name,
      `${fmt(r.value)} ${r.unit}`,
      target,
      ok === undefined ? '' : ok ? 'yes' : 'NO',
      r.note ?? '',
    ];
  });
  const header = ['figure', 'value', 'target', 'meets', 'note'];
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => (l[i] as string).length)));
  const row = (cells: string[]): string =>
    cells
      .map((c, i) => c.padEnd(widths[i] as number))
      .join('  ')
      .trimEnd();
  return [row(header), row(widths.map((w) => '-'.repeat(w))), ...lines.map(row)].join('\n');
}

export async function saveResults(
  file: URL,
  rows: readonly BenchRow[],
  run: { readonly quick: boolean; readonly seconds: number },
): Promise<void> {
  await mkdir(new URL('.', file), { recursive: true });
  const machine = {
    cpus: os.cpus().length,
    model: os.cpus()[0]?.model,
    node: process.version,
    platform: `${process.platform}/${process.arch}`,
    when: new Date().toISOString(),
  };
  await writeFile(
    file,
    `${JSON.stringify({ machine, run, rows: rows.map((r) => ({ ...r, meets: meets(r) })) }, null, 2)}\n`,
  );
}
