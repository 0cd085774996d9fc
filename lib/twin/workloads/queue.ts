/**
 * A keyed, deduplicating work queue, as client-go's workqueue: a key added many times before it is
 * processed is processed once; a key added while it is processed is processed again afterwards; a failed
 * key is retried with exponential backoff; `addAfter` looks again later (deadlines, minReadySeconds).
 * Processing happens on a later turn of the event loop, never inside the store event that added the key.
 */

import { StatusError } from '../errors.ts';

export interface WorkQueueOptions {
  /**
   * Process one key at most this often: events in between are coalesced into one sync. Keeps a
   * controller whose sync walks every node (DaemonSets) from doing so for each of 5,000 pod updates.
   */
  readonly minIntervalMs?: number;
}

const RETRY_BASE_MS = 5;
const RETRY_MAX_MS = 5_000;

export class WorkQueue {
  readonly #name: string;
  readonly #handle: (key: string) => void;
  readonly #minIntervalMs: number;
  readonly #pending = new Set<string>();
  readonly #timers = new Map<string, { at: number; timer: NodeJS.Timeout }>();
  readonly #failures = new Map<string, number>();
  readonly #lastRun = new Map<string, number>();
  #scheduled: NodeJS.Immediate | undefined;
  #stopped = false;

  /** `name` identifies the controller in the log of unexpected sync failures. */
  constructor(name: string, handle: (key: string) => void, opts: WorkQueueOptions = {}) {
    this.#name = name;
    this.#handle = handle;
    this.#minIntervalMs = opts.minIntervalMs ?? 0;
  }

  add(key: string): void {
    if (this.#stopped) return;
    this.#pending.add(key);
    this.#scheduled ??= setImmediate(() => this.#drain());
  }

  /** Add the key in `ms`; an earlier pending timer for the key wins. */
  addAfter(key: string, ms: number): void {
    if (this.#stopped) return;
    if (ms <= 0) {
      this.add(key);
      return;
    }
    const at = Date.now() + ms;
    const existing = this.#timers.get(key);
    if (existing && existing.at <= at) return;
    if (existing) clearTimeout(existing.timer);
    const timer = setTimeout(() => {
      this.#timers.delete(key);
      this.add(key);
    }, ms);
    timer.unref();
    this.#timers.set(key, { at, timer });
  }

  /** Forget a key's retry and rate-limit history (its object is gone). */
  forget(key: string): void {
    this.#failures.delete(key);
    this.#lastRun.delete(key);
  }

  stop(): void {
    this.#stopped = true;
    if (this.#scheduled) clearImmediate(this.#scheduled);
    for (const { timer } of this.#timers.values()) clearTimeout(timer);
    this.#timers.clear();
    this.#pending.clear();
  }

  #drain(): void {
    this.#scheduled = undefined;
    const keys = [...this.#pending];
    this.#pending.clear();
    const now = Date.now();
    for (const key of keys) {
      if (this.#stopped) return;
      if (this.#minIntervalMs > 0) {
        const wait = (this.#lastRun.get(key) ?? -Infinity) + this.#minIntervalMs - now;
        if (wait > 0) {
          this.addAfter(key, wait);
          continue;
        }
        this.#lastRun.set(key, now);
      }
      try {
        this.#handle(key);
        this.#failures.delete(key);
      } catch (err) {
        // API refusals (a conflict, a namespace being deleted) are expected and retried quietly; anything
        // else is a bug worth seeing. Either way the key is requeued rate-limited, as real controllers do.
        if (!(err instanceof StatusError)) console.error(`twin ${this.#name}: syncing ${key} failed:`, err);
        const n = (this.#failures.get(key) ?? 0) + 1;
        this.#failures.set(key, n);
        this.addAfter(key, Math.min(RETRY_BASE_MS * 2 ** n, RETRY_MAX_MS));
      }
    }
  }
}
