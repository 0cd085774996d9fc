/** The drift definition's control flow, run by the local engine with recording handlers. */
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { ClusterUnreachableError, KubeApiThrottledError } from '../../lib/errors.ts';
import { runLocally } from '../../lib/local/engine.ts';
import { renderDefinition } from '../../lib/local/render.ts';
import { DRIFT_STATES, driftDefinition } from '../../state-machines/drift.ts';
import { DRIFT_STEP_IDS } from '../../state-machines/steps.ts';
import { recording } from './recording.ts';

const workflow = renderDefinition(driftDefinition);

// asl-validator ships no types: its call signature, as documented.
const aslValidator = createRequire(import.meta.url)('asl-validator') as (definition: unknown) => {
  isValid: boolean;
  errors: unknown[];
};

const summary = (clusterId: string, status: 'clean' | 'drifted') => ({
  clusterId,
  status,
  counts: { critical: status === 'drifted' ? 1 : 0, warning: 0, info: 0 },
  findings: status === 'drifted' ? ['critical ccm-missing Deployment kube-system/x: expected …; seen …'] : [],
});

const input = { runId: 'd1', depth: 'shallow', maxConcurrency: 2 };
const list = async () => ['a', 'b', 'c'];

describe('the drift definition, run by the local engine', () => {
  it('is valid ASL with a Distributed Map over the registry, its concurrency from the input', () => {
    const map = (workflow.definition.States as Record<string, Record<string, unknown>>)[
      DRIFT_STATES.clusters
    ];
    expect(map).toMatchObject({
      Type: 'Map',
      ItemsPath: '$.clusters',
      MaxConcurrencyPath: '$.maxConcurrency',
      ItemProcessor: { ProcessorConfig: { Mode: 'DISTRIBUTED' } },
    });
    expect(aslValidator(workflow.definition)).toMatchObject({ isValid: true, errors: [] });
  });

  it('checks every cluster, publishes only the drifted one, and sums up', async () => {
    const { calls, handlers } = recording(DRIFT_STEP_IDS, {
      'list-clusters': list,
      'check-drift': async (e) => {
        const id = (e as { clusterId: string }).clusterId;
        return summary(id, id === 'b' ? 'drifted' : 'clean');
      },
      'summarize-drift': async (e) => e,
    });

    const result = await runLocally({ workflow, handlers, input });

    expect(result.status).toBe('SUCCEEDED');
    const checks = calls.filter((c) => c.step === 'check-drift').map((c) => c.event);
    expect(checks.map((e) => e.clusterId).sort()).toEqual(['a', 'b', 'c']);
    expect(checks.every((e) => e.runId === 'd1' && e.depth === 'shallow')).toBe(true);
    expect(calls.filter((c) => c.step === 'publish-drift').map((c) => c.event)).toEqual([
      { runId: 'd1', summary: summary('b', 'drifted') },
    ]);
    const summed = calls.find((c) => c.step === 'summarize-drift')?.event as { results: unknown[] };
    expect(summed.results).toEqual([summary('a', 'clean'), summary('b', 'drifted'), summary('c', 'clean')]);
  });

  it('retries a throttled check, and marks a cluster unknown when retries are spent, without failing the run', async () => {
    let throttled = 0;
    const { calls, handlers } = recording(DRIFT_STEP_IDS, {
      'list-clusters': list,
      'check-drift': async (e) => {
        const id = (e as { clusterId: string }).clusterId;
        if (id === 'a' && throttled++ < 2) throw new KubeApiThrottledError('list nodes: HTTP 429');
        if (id === 'c') throw new ClusterUnreachableError('list nodes: the API server did not answer');
        return summary(id, 'clean');
      },
      'summarize-drift': async (e) => e,
    });

    const result = await runLocally({
      workflow,
      handlers,
      input,
      retryIntervalOverrides: { [DRIFT_STATES.check]: 0 },
    });

    expect(result.status).toBe('SUCCEEDED');
    expect(throttled).toBe(3);
    // The first try and six retries (TRANSIENT_API) of the unreachable cluster.
    expect(calls.filter((c) => c.step === 'check-drift' && c.event.clusterId === 'c')).toHaveLength(7);
    const summed = calls.find((c) => c.step === 'summarize-drift')?.event as { results: unknown[] };
    expect(summed.results).toEqual([
      summary('a', 'clean'),
      summary('b', 'clean'),
      {
        clusterId: 'c',
        status: 'unknown',
        counts: { critical: 0, warning: 0, info: 0 },
        findings: [],
        error: 'ClusterUnreachable',
      },
    ]);
  });

  it('keeps a drifted cluster drifted when its event cannot be published, and says so', async () => {
    const { handlers, calls } = recording(DRIFT_STEP_IDS, {
      'list-clusters': async () => ['b'],
      'check-drift': async () => summary('b', 'drifted'),
      'publish-drift': async () => {
        throw new Error('EventBridge refused DriftDetected');
      },
      'summarize-drift': async (e) => e,
    });

    const result = await runLocally({ workflow, handlers, input });

    expect(result.status).toBe('SUCCEEDED');
    const summed = calls.find((c) => c.step === 'summarize-drift')?.event as { results: unknown[] };
    expect(summed.results).toEqual([{ ...summary('b', 'drifted'), publishFailed: { error: 'Error' } }]);
  });

  it('succeeds with nothing to check on an empty registry', async () => {
    const { calls, handlers } = recording(DRIFT_STEP_IDS, {
      'list-clusters': async () => [],
      'summarize-drift': async (e) => e,
    });
    const result = await runLocally({ workflow, handlers, input });
    expect(result.status).toBe('SUCCEEDED');
    expect(calls.map((c) => c.step)).toEqual(['list-clusters', 'summarize-drift']);
  });
});
