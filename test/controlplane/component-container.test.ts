/**
 * A control-plane static pod with a sidecar (kops' healthcheck, a KMS plugin) listed first: its
 * component's container is the one named after its component label, in the node file the agent edits and
 * in the mirror pod the orchestrator reads; a pod where nothing tells is refused, never guessed.
 */
import { readFileSync } from 'node:fs';
import type { V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { cloudFlagsOf, editStaticPod } from '../../lib/controlplane/static-pod.ts';
import { InvalidInputError } from '../../lib/errors.ts';
import { commandLine } from '../../lib/steps/cluster.ts';
import { TO_EXTERNAL_STATIC_PODS } from '../../lib/steps/edits.ts';

const KCM = readFileSync(
  new URL(
    '../../assets/twins/hosts/kubeadm-v1.26-aws/etc/kubernetes/manifests/kube-controller-manager.yaml',
    import.meta.url,
  ),
  'utf8',
);
const SIDECAR = {
  name: 'healthcheck',
  image: 'registry.k8s.io/kops/kube-apiserver-healthcheck:1.28.0',
  command: ['/healthcheck', '--cloud-provider=none'],
};
const TO_EXTERNAL_KCM = TO_EXTERNAL_STATIC_PODS[1] as (typeof TO_EXTERNAL_STATIC_PODS)[number];

/** The kubeadm manifest with a sidecar before its container (and, optionally, without its label). */
function withSidecar(opts: { label?: boolean } = {}): string {
  const pod = parse(KCM);
  pod.spec.containers = [SIDECAR, ...pod.spec.containers];
  if (opts.label === false) delete pod.metadata.labels;
  return stringify(pod);
}

describe('the component’s container of a control-plane static pod', () => {
  it('is read and edited by its name, the sidecar before it left alone', () => {
    const text = withSidecar();
    expect(cloudFlagsOf(text)['cloud-provider']).toBe('aws');
    const edited = editStaticPod(text, TO_EXTERNAL_KCM).text;
    const pod = parse(edited);
    expect(pod.spec.containers[0]).toEqual(SIDECAR);
    expect(pod.spec.containers[1].command).toContain('--cloud-provider=external');
    expect(cloudFlagsOf(edited)['cloud-provider']).toBe('external');
  });

  it('is refused when several containers and no label say which it is', () => {
    expect(() => cloudFlagsOf(withSidecar({ label: false }))).toThrow(InvalidInputError);
    expect(() => cloudFlagsOf(withSidecar({ label: false }))).toThrow(
      /containers healthcheck, kube-controller-manager/,
    );
  });

  it('is the one the orchestrator reads in the mirror pod, or a refusal naming the pod', () => {
    const pod = parse(withSidecar()) as V1Pod;
    expect(commandLine(pod)).toContain('--cloud-provider=aws');
    expect(commandLine(pod)).not.toContain('--cloud-provider=none');
    const unlabelled = parse(withSidecar({ label: false })) as V1Pod;
    expect(() => commandLine(unlabelled)).toThrow(
      /cannot tell which container of pod kube-system\/kube-controller-manager runs/,
    );
  });
});
