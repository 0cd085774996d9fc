/**
 * What each function's bundle holds, built as the stack builds it (cdk/bundling.ts): a function that never
 * talks to a cluster must not carry the Kubernetes client (≈ 2 MB with undici) into its cold start, nor
 * anything else but its schemas and middy (the YAML parser once came in through an import of a constant
 * from the CCM renderer: +112 KB in every such function).
 */
import { build } from 'esbuild';
import { describe, expect, it } from 'vitest';
import { ESBUILD_BUILD_OPTIONS, entryOf, FUNCTION_IDS, talksToCluster } from '../../cdk/bundling.ts';

async function bundledFiles(id: (typeof FUNCTION_IDS)[number]): Promise<string[]> {
  const result = await build({
    entryPoints: [entryOf(id)],
    ...ESBUILD_BUILD_OPTIONS,
    write: false,
    outdir: 'out',
    metafile: true,
    sourcemap: false,
    minify: false,
  });
  return Object.keys(result.metafile.inputs);
}

async function bundledPackages(id: (typeof FUNCTION_IDS)[number]): Promise<Set<string>> {
  const files = await bundledFiles(id);
  return new Set(files.map((file) => /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(file)?.[1] ?? '(ours)'));
}

describe('function bundles', () => {
  const storeOnly = FUNCTION_IDS.filter((id) => !talksToCluster(id));

  it.each(storeOnly)('%s carries only zod, middy and our code', async (id) => {
    const packages = await bundledPackages(id);
    expect([...packages].filter((p) => !['(ours)', 'zod', '@middy/core'].includes(p))).toEqual([]);
  });

  // Powertools and the X-Ray SDK come from the Powertools layer (cdk/powertools-layer.ts); the schema
  // validators are the tests' (test/providers/kube-object-schemas.ts).
  it.each(FUNCTION_IDS)(
    '%s carries neither Powertools, the X-Ray SDK nor the OpenAPI validators',
    async (id) => {
      const packages = [...(await bundledPackages(id))];
      expect(
        packages.filter((p) => /^@aws-lambda-powertools\/|^aws-xray-sdk|kubernetes-models/.test(p)),
      ).toEqual([]);
    },
  );

  it('a step function carries its own step, not the others', async () => {
    const steps = (await bundledFiles('flip-kubelet')).filter((f) => f.startsWith('lib/steps/'));
    expect(steps).toContain('lib/steps/nodes.ts');
    expect(steps.filter((f) => /^lib\/steps\/(index|preflight|ccm|restore|verify)\.ts$/.test(f))).toEqual([]);
  });

  it('a function that talks to the cluster does carry it (so the check above can fail)', async () => {
    expect(await bundledPackages('check-drift')).toContain('@kubernetes/client-node');
  });
});
