/**
 * The downgrade gives kubeadm's ClusterConfiguration back on the AWS twin: the original bytes when nobody
 * touched it since the upgrade; when an operator did, the in-tree settings come back and the operator's
 * change stays; a second removeCcm changes nothing.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { parseDocument } from 'yaml';
import { clusterConfigurationArgs, KUBEADM_CONFIG } from '../../lib/controlplane/kubeadm-config.ts';
import { localContext } from '../../lib/local/context.ts';
import type { Progress } from '../../lib/steps/context.ts';
import { removeCcm } from '../../lib/steps/restore.ts';
import { type E2E, startE2E } from '../e2e/harness.ts';
import { FIXTURES, fixtureSpec } from '../twin/running-twin.ts';

const MERGED = 'kubeadm-config changed since the upgrade: in-tree settings put back, other changes kept';

let e2e: E2E | undefined;
afterEach(async () => {
  await e2e?.stop();
  e2e = undefined;
});

async function readKubeadmConfig(e: E2E): Promise<{ text: string; resourceVersion: string }> {
  const cm = await e.t.core.readNamespacedConfigMap({
    name: KUBEADM_CONFIG.name,
    namespace: KUBEADM_CONFIG.namespace,
  });
  return { text: cm.data?.[KUBEADM_CONFIG.key] ?? '', resourceVersion: cm.metadata?.resourceVersion ?? '' };
}

/** An operator's change after the upgrade: an audit log for the API server and a new certSANs entry. */
async function changeAsOperator(e: E2E): Promise<void> {
  const cm = await e.t.core.readNamespacedConfigMap({
    name: KUBEADM_CONFIG.name,
    namespace: KUBEADM_CONFIG.namespace,
  });
  const doc = parseDocument(cm.data?.[KUBEADM_CONFIG.key] ?? '');
  doc.setIn(['apiServer', 'extraArgs', 'audit-log-path'], '/var/log/kube-audit.log');
  doc.setIn(['apiServer', 'certSANs'], ['api.example.internal']);
  await e.t.core.replaceNamespacedConfigMap({
    name: KUBEADM_CONFIG.name,
    namespace: KUBEADM_CONFIG.namespace,
    body: { ...cm, data: { ...cm.data, [KUBEADM_CONFIG.key]: doc.toString() } },
  });
}

/** The upgrade then the downgrade, `between` them; the downgrade's progress messages. */
async function upAndDown(
  e: E2E,
  between: () => Promise<void> = async () => undefined,
): Promise<{ upRunId: string; downRunId: string; messages: string[] }> {
  const up = await e.upgrade();
  expect(up.status).toBe('SUCCEEDED');
  await between();
  const messages: string[] = [];
  const down = await e.downgrade({ onProgress: (p: Progress) => messages.push(p.message) });
  expect(down.error).toBeUndefined();
  expect(down.status).toBe('SUCCEEDED');
  return { upRunId: up.runId, downRunId: down.runId, messages };
}

/** removeCcm once more, as a retried or repeated downgrade would run it; its progress messages. */
async function removeCcmAgain(e: E2E, runs: { upRunId: string; downRunId: string }): Promise<string[]> {
  const messages: string[] = [];
  const ctx = {
    ...localContext({
      clients: e.t,
      waitMs: 10_000,
      pollMs: 10,
      onProgress: (p) => messages.push(p.message),
    }),
    store: e.store,
  };
  await removeCcm({ clusterId: 'aws-mini', runId: runs.downRunId, sourceRunId: runs.upRunId }, ctx);
  return messages;
}

describe('removeCcm and kube-system/kubeadm-config', () => {
  it('gives the original bytes back when nothing changed it since the upgrade, and changes nothing twice', async () => {
    e2e = await startE2E(await fixtureSpec(FIXTURES.awsMini));
    const original = (await readKubeadmConfig(e2e)).text;
    const runs = await upAndDown(e2e, async () => {
      if (!e2e) return;
      expect((await readKubeadmConfig(e2e)).text).not.toBe(original);
    });
    expect(runs.messages).not.toContain(MERGED);
    const back = await readKubeadmConfig(e2e);
    expect(back.text).toBe(original);

    expect(await removeCcmAgain(e2e, runs)).not.toContain(MERGED);
    expect(await readKubeadmConfig(e2e)).toEqual(back);
  });

  it('keeps an operator’s change made after the upgrade and puts the in-tree flags and volumes back, once', async () => {
    e2e = await startE2E(await fixtureSpec(FIXTURES.awsMini));
    const original = (await readKubeadmConfig(e2e)).text;
    const runs = await upAndDown(e2e, () => changeAsOperator(e2e as E2E));
    expect(runs.messages).toContain(MERGED);

    const back = await readKubeadmConfig(e2e);
    expect(back.text).not.toBe(original);
    expect(Object.fromEntries(clusterConfigurationArgs(back.text, 'apiServer'))).toEqual({
      ...Object.fromEntries(clusterConfigurationArgs(original, 'apiServer')),
      'audit-log-path': '/var/log/kube-audit.log',
    });
    expect(clusterConfigurationArgs(back.text, 'controllerManager')).toEqual(
      clusterConfigurationArgs(original, 'controllerManager'),
    );
    const [was, now] = [original, back.text].map((t) => parseDocument(t).toJS());
    expect(now.apiServer.certSANs).toEqual(['api.example.internal']);
    expect(now.apiServer.extraVolumes).toEqual(was.apiServer.extraVolumes);
    expect(now.controllerManager.extraVolumes).toEqual(was.controllerManager.extraVolumes);
    // Everything but the operator's change is the original.
    delete now.apiServer.certSANs;
    delete now.apiServer.extraArgs['audit-log-path'];
    expect(now).toEqual(was);

    expect(await removeCcmAgain(e2e, runs)).not.toContain(MERGED);
    expect(await readKubeadmConfig(e2e)).toEqual(back);
  });
});
