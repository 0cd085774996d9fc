/**
 * An empty app that installs ccm-migrate from its packed tarball, as a user's project would, with every
 * dependency at the version the project's lock file pins (the versions CI tests): the app's lock file is
 * made from ours, so `npm ci --prefer-offline` installs from the npm cache that the project's `npm ci`
 * filled, without asking the registry for anything.
 */
import { execFile } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import * as z from 'zod';

const run = promisify(execFile);

const LockEntrySchema = z.looseObject({ dev: z.boolean().optional() });
const LockSchema = z.looseObject({ packages: z.record(z.string(), LockEntrySchema) });
const ManifestSchema = z.looseObject({
  name: z.string(),
  version: z.string(),
  dependencies: z.record(z.string(), z.string()),
  optionalDependencies: z.record(z.string(), z.string()).optional(),
  bin: z.record(z.string(), z.string()),
  engines: z.record(z.string(), z.string()).optional(),
  license: z.string().optional(),
});

export const npmFlags = ['--prefer-offline', '--no-audit', '--no-fund'];

/** `npm pack` of the project into `dir` (prepack builds dist/): the tarball's path and its file list. */
export async function pack(project: string, dir: string): Promise<{ tarball: string; files: string[] }> {
  const { stdout } = await run('npm', ['pack', '--json', '--pack-destination', dir], {
    cwd: project,
    maxBuffer: 64 * 1024 * 1024,
  });
  const [packed] = z
    .array(z.object({ filename: z.string(), files: z.array(z.object({ path: z.string() })) }))
    .parse(JSON.parse(stdout.slice(stdout.indexOf('['))));
  if (!packed) throw new Error('npm pack reported no package');
  return { tarball: path.join(dir, packed.filename), files: packed.files.map((f) => f.path) };
}

/** The app's package-lock.json: ccm-migrate from the tarball, its dependencies as our lock pins them. */
function appLock(
  ours: z.infer<typeof LockSchema>,
  manifest: z.infer<typeof ManifestSchema>,
  tarball: string,
) {
  const packages: Record<string, unknown> = {
    '': { name: 'app', dependencies: { [manifest.name]: `file:${tarball}` } },
    [`node_modules/${manifest.name}`]: {
      version: manifest.version,
      resolved: `file:${tarball}`,
      license: manifest.license,
      dependencies: manifest.dependencies,
      optionalDependencies: manifest.optionalDependencies,
      bin: manifest.bin,
      engines: manifest.engines,
    },
  };
  for (const [key, entry] of Object.entries(ours.packages)) {
    if (key !== '' && !entry.dev) packages[key] = entry;
  }
  return { name: 'app', lockfileVersion: 3, requires: true, packages };
}

/** Install the tarball into the empty directory `app`. */
export async function installInto(app: string, project: string, tarball: string): Promise<void> {
  const ours = LockSchema.parse(JSON.parse(await readFile(path.join(project, 'package-lock.json'), 'utf8')));
  const manifest = ManifestSchema.parse(
    JSON.parse(await readFile(path.join(project, 'package.json'), 'utf8')),
  );
  const relative = path.relative(app, tarball);
  await writeFile(
    path.join(app, 'package.json'),
    JSON.stringify({
      name: 'app',
      private: true,
      type: 'module',
      dependencies: { [manifest.name]: `file:${relative}` },
    }),
  );
  await writeFile(
    path.join(app, 'package-lock.json'),
    JSON.stringify(appLock(ours, manifest, relative), null, 2),
  );
  await run('npm', ['ci', ...npmFlags], { cwd: app, maxBuffer: 64 * 1024 * 1024 });
}
