/**
 * The functions' logger (lib/aws/logger.ts) on Powertools: only allowlisted fields reach a line, the Lambda
 * context and cold start are on every line of an invocation, and the level comes from the environment.
 */
import { afterEach, expect, it, vi } from 'vitest';
import { capturedLogger } from './captured-logger.ts';

const CONTEXT = {
  functionName: 'ccm-migrate-verify',
  awsRequestId: 'req-1',
  invokedFunctionArn: 'arn:aws:lambda:eu-west-1:111111111111:function:ccm-migrate-verify',
  memoryLimitInMB: '512',
  getRemainingTimeInMillis: () => 60_000,
};

afterEach(() => {
  vi.unstubAllEnvs();
  vi.resetModules();
});

it('writes only the allowlisted fields: a planted secret never reaches a line', () => {
  const lines: string[] = [];
  const planted = { step: 'verify', kubeconfig: 'users: [{token: s3cr3t-planted}]', token: 's3cr3t-planted' };
  capturedLogger(lines).info('done', planted as never);
  capturedLogger(lines).error('failed', { ...planted, errorName: 'AgentFailed' } as never);
  expect(lines).toHaveLength(2);
  for (const line of lines) {
    expect(line).not.toContain('s3cr3t-planted');
    expect(JSON.parse(line)).toMatchObject({ step: 'verify', service: 'ccm-migrate' });
  }
});

it('puts the Lambda context and the cold start on the lines of an invocation', async () => {
  // What Lambda sets in an on-demand environment, before the module (and its Powertools) loads.
  vi.stubEnv('AWS_LAMBDA_INITIALIZATION_TYPE', 'on-demand');
  vi.resetModules();
  const { lambdaHandler } = await import('../../lib/aws/handler.ts');
  const { capturedLogger: fresh } = await import('./captured-logger.ts');
  const lines: string[] = [];
  const handler = lambdaHandler('verify', async () => ({ ok: true }), fresh(lines));
  await handler({ clusterId: 'c1', runId: 'up-1' }, CONTEXT as never);
  await handler({ clusterId: 'c1', runId: 'up-2' }, CONTEXT as never);
  expect(lines.map((l) => JSON.parse(l))).toEqual([
    expect.objectContaining({ level: 'INFO', message: 'done', runId: 'up-1', cold_start: true }),
    expect.objectContaining({ runId: 'up-2', cold_start: false, function_name: 'ccm-migrate-verify' }),
  ]);
  expect(JSON.parse(lines[0] ?? '{}')).toMatchObject({ function_request_id: 'req-1' });
});

it('logs at the level the environment sets', async () => {
  vi.stubEnv('POWERTOOLS_LOG_LEVEL', 'ERROR');
  vi.resetModules();
  const { capturedLogger: fresh } = await import('./captured-logger.ts');
  const lines: string[] = [];
  fresh(lines).info('done', { step: 'verify' });
  fresh(lines).error('failed', { step: 'verify' });
  expect(lines.map((l) => JSON.parse(l).level)).toEqual(['ERROR']);
});
