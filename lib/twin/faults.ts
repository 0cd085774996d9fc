/**
 * Faults the twin injects: API errors, added latency, connection resets and concurrent writes per verb
 * and resource, a node
 * whose kubelet never comes back after a restart, nodes that join later, failing cloud lookups of a node, and API outage windows. Set from the spec and changed at
 * run time (tests add and clear them while a migration runs).
 */
import type { Fault } from './spec.ts';

export type Verb = 'get' | 'list' | 'watch' | 'create' | 'update' | 'patch' | 'delete';

/** What the API layer must do to one request. */
export interface RequestFault {
  /** Answer with this status code instead of serving the request. */
  readonly errorCode?: 429 | 500 | 503;
  /** Destroy the connection without an answer. */
  readonly reset?: boolean;
  /** Milliseconds to wait before serving. */
  readonly extraLatencyMs: number;
  /** Write the object (as another client would) before serving the request. */
  readonly concurrentWrite?: boolean;
}

function matches(f: { verb?: Verb; resource?: string }, verb: Verb, resource: string): boolean {
  return (!f.verb || f.verb === verb) && (!f.resource || f.resource === resource);
}

export class Faults {
  #faults: Fault[];
  /** How often each counted fault (concurrentWrite with `times`) has fired. */
  readonly #fired = new Map<Fault, number>();
  readonly #startedAt: number;
  readonly #random: () => number;

  constructor(initial: readonly Fault[], opts: { startedAt?: number; random?: () => number } = {}) {
    this.#faults = [...initial];
    this.#startedAt = opts.startedAt ?? Date.now();
    this.#random = opts.random ?? Math.random;
  }

  get list(): readonly Fault[] {
    return this.#faults;
  }

  add(fault: Fault): void {
    this.#faults.push(fault);
  }

  /** Remove this one fault (the same object that was added), leaving the others. */
  remove(fault: Fault): void {
    this.#faults = this.#faults.filter((f) => f !== fault);
  }

  /** Remove faults of one kind, or all of them. */
  clear(kind?: Fault['kind']): void {
    this.#faults = kind ? this.#faults.filter((f) => f.kind !== kind) : [];
  }

  /** Decide what happens to one API request. `resource` is the plural (`nodes`). */
  forRequest(verb: Verb, resource: string): RequestFault {
    let extraLatencyMs = 0;
    for (const f of this.#faults) {
      if (f.kind === 'latency' && matches(f, verb, resource)) extraLatencyMs += f.extra;
    }
    const writer = this.#faults.find(
      (f) =>
        f.kind === 'concurrentWrite' &&
        matches(f, verb, resource) &&
        (f.times === undefined || (this.#fired.get(f) ?? 0) < f.times) &&
        this.#random() < f.rate,
    );
    if (writer) {
      this.#fired.set(writer, (this.#fired.get(writer) ?? 0) + 1);
      return { concurrentWrite: true, extraLatencyMs };
    }
    for (const f of this.#faults) {
      if (f.kind === 'reset' && matches(f, verb, resource) && this.#random() < f.rate) {
        return { reset: true, extraLatencyMs };
      }
      if (f.kind === 'error' && matches(f, verb, resource) && this.#random() < f.rate) {
        return { errorCode: f.code, extraLatencyMs };
      }
    }
    return { extraLatencyMs };
  }

  /** Whether this node's kubelet stays down once restarted. */
  nodeNeverReturns(node: string): boolean {
    return this.#faults.some((f) => f.kind === 'nodeNeverReturns' && f.node === node);
  }

  /** Why `component` on `node` exits at start with these flags (a crashWithoutFlag fault), if it does. */
  crashWithout(node: string, component: string, flags: ReadonlyMap<string, string>): string | undefined {
    const f = this.#faults.find(
      (x) =>
        x.kind === 'crashWithoutFlag' && x.node === node && x.component === component && !flags.has(x.flag),
    );
    return f?.kind === 'crashWithoutFlag'
      ? `fault: ${component} on ${node} exits without --${f.flag}`
      : undefined;
  }

  /**
   * The nodeJoins faults whose time has come and that have not fired yet: each fires once, however often
   * this is asked.
   */
  joinsDue(now = Date.now()): Extract<Fault, { kind: 'nodeJoins' }>[] {
    const due = this.#faults.filter(
      (f): f is Extract<Fault, { kind: 'nodeJoins' }> =>
        f.kind === 'nodeJoins' && now - this.#startedAt >= f.after && !this.#fired.has(f),
    );
    for (const f of due) this.#fired.set(f, 1);
    return due;
  }

  /**
   * How an instance lookup for `node` by a controller of this side fails now (a cloudLookupFails fault
   * whose window is open), if it does.
   */
  cloudLookup(
    node: string,
    by: 'external' | 'in-tree',
    now = Date.now(),
  ): 'notFound' | 'unauthorized' | undefined {
    const t = now - this.#startedAt;
    const f = this.#faults.find(
      (x) =>
        x.kind === 'cloudLookupFails' &&
        x.node === node &&
        (x.by === by || x.by === 'both') &&
        t >= x.after &&
        (x.duration === undefined || t < x.after + x.duration),
    );
    return f?.kind === 'cloudLookupFails' ? f.error : undefined;
  }

  /** Whether an API outage window covers this moment. */
  apiOutageAt(now = Date.now()): boolean {
    const t = now - this.#startedAt;
    return this.#faults.some((f) => f.kind === 'apiOutage' && t >= f.after && t < f.after + f.duration);
  }
}
