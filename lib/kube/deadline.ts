/**
 * One deadline per invocation. Lambda kills a function at its timeout whatever it is doing, mid-write
 * included; so every wait of a step, its sequential waits included, draws on one deadline made when the
 * invocation starts (Lambda's remaining time less a margin; in-process, a budget), and a wait that reaches it
 * ends with DeadlineReached, which the state machine retries: the step is idempotent and resumes.
 */
import { DeadlineReachedError, NotReadyYetError } from '../errors.ts';

export class Deadline {
  /** When it is reached (epoch ms; Infinity: never). */
  readonly at: number;
  /** Whether reaching `at` means the invocation's time is up, not only a wait's own bound. */
  readonly #ofInvocation: boolean;

  protected constructor(at: number, ofInvocation: boolean) {
    this.at = at;
    this.#ofInvocation = ofInvocation;
  }

  /** The invocation's deadline, `ms` from now. */
  static in(ms: number): Deadline {
    return new Deadline(Date.now() + ms, true);
  }

  remainingMs(): number {
    return Math.max(0, this.at - Date.now());
  }

  /**
   * Run `work` against the sooner of this deadline and `ms` from now: a wait's own bound inside the
   * invocation's time. `work` always gets a deadline of its own (never this one), so that what it draws on
   * it is part of this one draw.
   */
  within<T>(ms: number, work: (bound: Deadline) => Promise<T>): Promise<T> {
    const own = Date.now() + ms;
    return work(own < this.at ? new Deadline(own, false) : new Deadline(this.at, this.#ofInvocation));
  }

  /**
   * The error of a wait that reached this deadline: NotReadyYet when its own bound ran out (the cluster is
   * slow: back off), DeadlineReached when the invocation's time did (the step is cut: resume it).
   */
  reached(message: string): NotReadyYetError | DeadlineReachedError {
    return this.#ofInvocation
      ? new DeadlineReachedError(`${message}: the invocation's time is up`)
      : new NotReadyYetError(message);
  }
}
