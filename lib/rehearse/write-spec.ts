/**
 * A snapshot on disk: the spec as YAML, and each distinct host file once, in a directory beside it
 * (`<spec>.files/`), which the spec's groups name by `{ file: … }` as the example specs do (loadTwinSpec
 * reads them back).
 */
import { createHash } from 'node:crypto';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { stringify } from 'yaml';
import type { TwinSpecInput } from '../twin/spec.ts';

function fileName(hostPath: string, text: string): string {
  const hash = createHash('sha256').update(text).digest('hex').slice(0, 12);
  return `${hostPath.replace(/^\/+/, '').replaceAll('/', '_')}.${hash}`;
}

/** Write `spec` to `out` and its host files under `<out without extension>.files/`; the files written. */
export async function writeSnapshotSpec(spec: TwinSpecInput, out: string, header: string): Promise<string[]> {
  const dirName = `${path.basename(out).replace(/\.(ya?ml|json)$/, '')}.files`;
  const dir = path.join(path.dirname(out), dirName);
  await rm(dir, { recursive: true, force: true });
  await mkdir(dir, { recursive: true });
  const written = new Map<string, string>();
  const nodeGroups = (spec.nodeGroups ?? []).map((g) => ({
    ...g,
    files: Object.fromEntries(
      Object.entries(g.files ?? {}).map(([hostPath, text]) => {
        const name = fileName(hostPath, text as string);
        written.set(name, text as string);
        return [hostPath, { file: `${dirName}/${name}` }];
      }),
    ),
  }));
  for (const [name, text] of written) await writeFile(path.join(dir, name), text);
  const body = stringify({ ...spec, nodeGroups }, { lineWidth: 0 });
  await writeFile(out, `${header}${body}`);
  return [out, ...[...written.keys()].map((n) => path.join(dir, n))];
}
