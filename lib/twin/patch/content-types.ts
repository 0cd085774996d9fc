/**
 * Patch types by request Content-Type, as the API server's PATCH handler accepts them
 * (k8s.io/apimachinery/pkg/types/patch.go). application/apply-patch+cbor is left out: the real server
 * only takes it behind the CBORServingAndStorage feature gate.
 */

export type PatchType = 'json' | 'merge' | 'strategic' | 'apply';

const BY_MEDIA_TYPE: ReadonlyMap<string, PatchType> = new Map([
  ['application/json-patch+json', 'json'],
  ['application/merge-patch+json', 'merge'],
  ['application/strategic-merge-patch+json', 'strategic'],
  ['application/apply-patch+yaml', 'apply'],
]);

/** The patch type a Content-Type names (parameters such as `;charset=utf-8` ignored), if any. */
export function patchTypeOf(contentType: string | undefined): PatchType | undefined {
  const mediaType = contentType?.split(';', 1)[0]?.trim().toLowerCase();
  return mediaType ? BY_MEDIA_TYPE.get(mediaType) : undefined;
}
