/**
 * One timer for every delayed action of every kubelet (pod starts, static pod restarts, crash-loop
 * back-offs, kubelet restarts): a min-heap of due times behind a single setTimeout, so that 5,000 nodes
 * do not mean 5,000 timers.
 */

interface Entry {
  readonly due: number;
  readonly seq: number;
  readonly run: () => void;
}

export class Timers {
  readonly #heap: Entry[] = [];
  #seq = 0;
  #timer: NodeJS.Timeout | undefined;
  #armedFor = Number.POSITIVE_INFINITY;
  #stopped = false;
  readonly #onError: (err: unknown) => void;

  /** `onError` gets what an action throws, so that one failed action does not stop the others. */
  constructor(onError: (err: unknown) => void) {
    this.#onError = onError;
  }

  /** Run `fn` after `delayMs` (in order of due time, then of scheduling). */
  after(delayMs: number, fn: () => void): void {
    if (this.#stopped) return;
    this.#push({ due: Date.now() + Math.max(0, delayMs), seq: this.#seq++, run: fn });
    this.#arm();
  }

  stop(): void {
    this.#stopped = true;
    clearTimeout(this.#timer);
    this.#heap.length = 0;
  }

  #arm(): void {
    const next = this.#heap[0];
    if (!next || next.due >= this.#armedFor) return;
    clearTimeout(this.#timer);
    this.#armedFor = next.due;
    this.#timer = setTimeout(() => this.#fire(), Math.max(0, next.due - Date.now()));
  }

  #fire(): void {
    this.#armedFor = Number.POSITIVE_INFINITY;
    const now = Date.now();
    while (!this.#stopped && this.#heap[0] && (this.#heap[0] as Entry).due <= now) {
      try {
        (this.#pop() as Entry).run();
      } catch (err) {
        this.#onError(err);
      }
    }
    this.#arm();
  }

  #less(a: Entry, b: Entry): boolean {
    return a.due < b.due || (a.due === b.due && a.seq < b.seq);
  }

  #push(e: Entry): void {
    const h = this.#heap;
    h.push(e);
    for (let i = h.length - 1; i > 0; ) {
      const parent = (i - 1) >> 1;
      if (!this.#less(h[i] as Entry, h[parent] as Entry)) break;
      [h[i], h[parent]] = [h[parent] as Entry, h[i] as Entry];
      i = parent;
    }
  }

  #pop(): Entry | undefined {
    const h = this.#heap;
    const top = h[0];
    const last = h.pop();
    if (h.length > 0 && last) {
      h[0] = last;
      for (let i = 0; ; ) {
        const l = 2 * i + 1;
        const r = l + 1;
        let min = i;
        if (l < h.length && this.#less(h[l] as Entry, h[min] as Entry)) min = l;
        if (r < h.length && this.#less(h[r] as Entry, h[min] as Entry)) min = r;
        if (min === i) break;
        [h[i], h[min]] = [h[min] as Entry, h[i] as Entry];
        i = min;
      }
    }
    return top;
  }
}
