/**
 * The fleet file of `ccm-migrate drift --registry FILE` (local mode): the clusters to check, each with the
 * path of its kubeconfig (relative to the file) instead of the registry's secret ARN. YAML or JSON:
 *
 *   clusters:
 *     - clusterId: prod-eu-1
 *       provider: aws
 *       desiredMode: external
 *       kubeconfig: kubeconfigs/prod-eu-1.yaml
 *       context: admin@prod-eu-1   # optional: the kubeconfig's current context otherwise
 *       autoRemediate: true        # optional: request a run back to desiredMode on a critical finding
 *       maxUnavailable: 2          # optional (1): for that run
 *
 * The file holds paths only; kubeconfigs are read when a cluster is checked, and never printed.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { parse as parseYaml } from 'yaml';
import * as z from 'zod';
import { InvalidInputError } from '../errors.ts';
import { PROVIDERS } from '../providers/catalog.ts';
import { ResourceName } from '../steps/schemas.ts';
import { parseInput } from '../store/run-record.ts';
import type { FleetCluster } from './events.ts';
import { DesiredModeSchema } from './findings.ts';

const FleetEntrySchema = z.strictObject({
  clusterId: ResourceName,
  provider: z.enum(PROVIDERS),
  desiredMode: DesiredModeSchema,
  kubeconfig: z.string().min(1),
  context: z.string().min(1).optional(),
  autoRemediate: z.boolean().default(false),
  maxUnavailable: z.int().min(1).max(100).default(1),
});

export const FleetFileSchema = z.strictObject({ clusters: z.array(FleetEntrySchema) });

export interface FleetMember extends FleetCluster {
  /** Absolute path of its kubeconfig. */
  readonly kubeconfig: string;
  readonly context?: string;
}

export async function loadFleetFile(file: string): Promise<FleetMember[]> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    throw new InvalidInputError(`cannot read fleet file ${file}: ${(err as NodeJS.ErrnoException).code}`);
  }
  let value: unknown;
  try {
    value = parseYaml(text);
  } catch {
    throw new InvalidInputError(`fleet file ${file} is neither YAML nor JSON`);
  }
  const { clusters } = parseInput(FleetFileSchema, value, `fleet file ${file}`);
  const seen = new Set<string>();
  for (const c of clusters) {
    if (seen.has(c.clusterId)) throw new InvalidInputError(`fleet file ${file} lists ${c.clusterId} twice`);
    seen.add(c.clusterId);
  }
  const dir = path.dirname(path.resolve(file));
  return clusters.map((c) => ({
    clusterId: c.clusterId,
    provider: c.provider,
    desiredMode: c.desiredMode,
    policy: { maxUnavailable: c.maxUnavailable, autoRemediate: c.autoRemediate },
    kubeconfig: path.resolve(dir, c.kubeconfig),
    ...(c.context ? { context: c.context } : {}),
  }));
}
