/**
 * What a twin of a real cluster gets in place of what the snapshot never reads: each cloud config and
 * credential plugin its nodes name (they can hold credentials, or are programs), and each Secret the
 * migration reads. Every placeholder says it is one; none carries anything read from the cluster.
 */
import path from 'node:path';
import type { WithheldKind } from './node-files.ts';

export const PLACEHOLDER_MARK = 'ccm-migrate twin snapshot: PLACEHOLDER';

/**
 * A file the twin's kubelet and control plane find where the node had one. A cloud config in JSON (Azure's
 * azure.json) stays JSON; any other is read as INI, where `#` starts a comment, with `globalLines` (names,
 * never credentials) under [Global].
 */
export function placeholderFile(file: string, kind: WithheldKind, globalLines = ''): string {
  if (kind === 'credential-plugin') {
    return `#!/bin/sh\n# ${PLACEHOLDER_MARK} for the credential plugin ${path.posix.basename(file)}: the twin's kubelet only checks that it is there.\nexit 1\n`;
  }
  const why = `${PLACEHOLDER_MARK} for ${file}, whose contents were not read (a cloud config can hold credentials)`;
  return file.endsWith('.json')
    ? `${JSON.stringify({ _comment: why }, null, 2)}\n`
    : `# ${why}\n[Global]\n${globalLines}`;
}

/** A Secret by name only: each key the migration reads holds a placeholder, never the cluster's value. */
export function placeholderSecret(name: string, namespace: string, keys: readonly string[]) {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name, namespace, annotations: { 'ccm-migrate/twin-placeholder': 'true' } },
    type: 'Opaque',
    data: Object.fromEntries(keys.map((k) => [k, Buffer.from(`# ${PLACEHOLDER_MARK}\n`).toString('base64')])),
  };
}
