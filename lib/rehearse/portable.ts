/** An object as a spec holds it: what its owner wrote, none of what the API server added. */
export function portable(
  apiVersion: string,
  kind: string,
  obj: { metadata?: { name?: string; namespace?: string; labels?: object; annotations?: object } },
  rest: Record<string, unknown>,
): Record<string, unknown> {
  const { name, namespace, labels, annotations } = obj.metadata ?? {};
  const kept = Object.fromEntries(
    Object.entries(annotations ?? {}).filter(
      ([k]) => k !== 'kubectl.kubernetes.io/last-applied-configuration',
    ),
  );
  return {
    apiVersion,
    kind,
    metadata: {
      name,
      ...(namespace ? { namespace } : {}),
      ...(labels && Object.keys(labels).length > 0 ? { labels } : {}),
      ...(Object.keys(kept).length > 0 ? { annotations: kept } : {}),
    },
    ...rest,
  };
}
