/** `ccm-migrate providers`: the catalog as a table (or JSON): what ccm-migrate knows about each provider. */
import { inTreeRemovedIn, knownFacts, PROVIDERS } from '../providers/catalog.ts';

export interface ProviderRow {
  readonly provider: string;
  readonly name: string;
  readonly inTreeName: string | null;
  readonly inTreeRemovedIn: string | null;
  readonly cloudConfigRequired: boolean;
  readonly nodeManager: string | null;
  /** Kubernetes minor → CCM image. */
  readonly images: Readonly<Record<string, string>>;
}

export function providerRows(): ProviderRow[] {
  return PROVIDERS.map((id) => {
    const f = knownFacts(id);
    const removed = inTreeRemovedIn(id);
    return {
      provider: id,
      name: f.displayName,
      inTreeName: f.inTreeName ?? null,
      inTreeRemovedIn: removed === undefined ? null : `1.${removed}`,
      cloudConfigRequired: f.cloudConfigRequired ?? false,
      nodeManager: f.nodeManager?.daemonSetName ?? null,
      images: Object.fromEntries(Object.entries(f.ccmImages).map(([minor, image]) => [`1.${minor}`, image])),
    };
  });
}

export function renderProviders(rows: readonly ProviderRow[]): string {
  return `${rows
    .map((r) => {
      const minors = Object.keys(r.images);
      const head = [
        `${r.provider} (${r.name})`,
        `in-tree ${r.inTreeName ? `--cloud-provider=${r.inTreeName}, removed in ${r.inTreeRemovedIn}` : 'never (no downgrade target)'}`,
        `cloud config ${r.cloudConfigRequired ? 'required' : 'optional'}`,
        ...(r.nodeManager ? [`node manager ${r.nodeManager}`] : []),
      ].join('; ');
      const images = minors.map((m) => `    ${m.padEnd(5)} ${r.images[m]}`).join('\n');
      return `${head}\n  CCM images per Kubernetes minor (${minors[0]}–${minors.at(-1)}):\n${images}`;
    })
    .join('\n\n')}\n`;
}
