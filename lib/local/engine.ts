/**
 * The local engine: the ASL that the CDK stack deploys, run in-process by aws-local-stepfunctions, each Task
 * calling its step's handler directly instead of a Lambda function. It also counts state transitions
 * (what Step Functions Standard bills) from the engine's event log.
 */
import { ExecutionAbortedError, StateMachine } from 'aws-local-stepfunctions';
import type { StepId } from '../../state-machines/steps.ts';
import type { RenderedWorkflow } from './render.ts';

export type StepHandler = (event: unknown) => Promise<unknown>;

/** One entry of the engine's event log (the package declares the type but does not export it). */
export type EventLog =
  ReturnType<StateMachine['run']>['eventLogs'] extends AsyncGenerator<infer E> ? E : never;

export interface LocalRunOptions {
  readonly workflow: RenderedWorkflow;
  /** The function each step's Task calls. */
  readonly handlers: Readonly<Record<StepId, StepHandler>>;
  /** Tasks that run no step (the upgrade's approval gate), by state name: they get the Task's parameters. */
  readonly taskHandlers?: Readonly<Record<string, StepHandler>>;
  readonly input: Record<string, unknown>;
  /** Replace retry intervals (ms) per state name, e.g. to test retries without waiting. */
  readonly retryIntervalOverrides?: Readonly<Record<string, number | number[]>>;
  /** Called for every engine event: progress output, tests. */
  readonly onEvent?: (event: EventLog) => void;
  readonly signal?: AbortSignal;
}

export interface LocalRunResult {
  readonly status: 'SUCCEEDED' | 'FAILED' | 'ABORTED';
  readonly output?: unknown;
  /** The error that ended a failed run, as Step Functions reports it. */
  readonly error?: { readonly name: string; readonly cause: string };
  /** States entered plus retries: the count Step Functions Standard bills. */
  readonly transitions: number;
}

/**
 * Events that Step Functions bills as a state transition: every state entered, those inside a Map's
 * iterations included (the engine reports them too), and every retry. An inline Map's iteration itself is
 * not billed ("Transitions", Step Functions developer guide), so an iteration's start is not counted.
 */
function isTransition(event: EventLog): boolean {
  return event.type === 'StateEntered' || event.type === 'StateRetried';
}

/** Validating a definition costs 0.1–0.2 s; a machine runs any number of executions, so build it once. */
const machines = new WeakMap<RenderedWorkflow, StateMachine>();

function stateMachineOf(workflow: RenderedWorkflow): StateMachine {
  let machine = machines.get(workflow);
  if (!machine) {
    machine = new StateMachine(workflow.definition as never, { validationOptions: { checkPaths: true } });
    machines.set(workflow, machine);
  }
  return machine;
}

/**
 * The context object's task token in-process: a Task that waits for a token (the approval gate) is answered
 * by its local handler directly, so the token only has to be there.
 */
const LOCAL_TASK_TOKEN = 'local';

export async function runLocally(opts: LocalRunOptions): Promise<LocalRunResult> {
  const taskResourceLocalHandlers: Record<string, (input: unknown) => Promise<unknown>> = {};
  const byState: Array<[string, StepHandler]> = [
    ...[...opts.workflow.taskSteps].map(([stateName, step]): [string, StepHandler] => [
      stateName,
      opts.handlers[step],
    ]),
    ...Object.entries(opts.taskHandlers ?? {}),
  ];
  for (const [stateName, handler] of byState) {
    // A Lambda gets its event as JSON and returns JSON: keep that boundary locally too.
    taskResourceLocalHandlers[stateName] = async (input) =>
      JSON.parse(JSON.stringify((await handler(JSON.parse(JSON.stringify(input)))) ?? null));
  }
  const machine = stateMachineOf(opts.workflow);
  const execution = machine.run(opts.input as never, {
    context: { Task: { Token: LOCAL_TASK_TOKEN } },
    overrides: {
      taskResourceLocalHandlers: taskResourceLocalHandlers as never,
      ...(opts.retryIntervalOverrides
        ? { retryIntervalOverrides: opts.retryIntervalOverrides as never }
        : {}),
    },
    noThrowOnAbort: false,
  });
  const abort = (): void => execution.abort();
  opts.signal?.addEventListener('abort', abort, { once: true });

  let transitions = 0;
  const collect = (async () => {
    for await (const event of execution.eventLogs) {
      if (isTransition(event)) transitions += 1;
      opts.onEvent?.(event);
    }
  })();
  try {
    const output = await execution.result;
    await collect;
    return { status: 'SUCCEEDED', output, transitions };
  } catch (err) {
    await collect.catch(() => undefined);
    if (err instanceof ExecutionAbortedError) return { status: 'ABORTED', transitions };
    const cause = err as Error & { cause?: unknown };
    const inner = cause.cause instanceof Error ? cause.cause : cause;
    return { status: 'FAILED', error: { name: inner.name, cause: inner.message }, transitions };
  } finally {
    opts.signal?.removeEventListener('abort', abort);
  }
}
