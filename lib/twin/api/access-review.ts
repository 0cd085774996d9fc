/**
 * SelfSubjectAccessReview (`kubectl auth can-i`): the in-process twin authorises every request, so every
 * review is allowed. A real-API twin answers with its real authorizer.
 */
import { decodeBody, objectBodyFormat } from './body.ts';

export const ACCESS_REVIEW = {
  group: 'authorization.k8s.io',
  version: 'v1',
  plural: 'selfsubjectaccessreviews',
  kind: 'SelfSubjectAccessReview',
} as const;

export const ACCESS_REVIEW_PATH = `/apis/${ACCESS_REVIEW.group}/${ACCESS_REVIEW.version}/${ACCESS_REVIEW.plural}`;

export function accessReview(body: Buffer, contentType: string | undefined): object {
  const review = decodeBody(body, objectBodyFormat(contentType)) as { spec?: unknown };
  return {
    apiVersion: `${ACCESS_REVIEW.group}/${ACCESS_REVIEW.version}`,
    kind: ACCESS_REVIEW.kind,
    metadata: { creationTimestamp: null },
    spec: review.spec ?? {},
    status: { allowed: true, reason: 'the twin authorises every request' },
  };
}
