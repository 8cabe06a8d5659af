/**
 * At most `max` tasks run at once; the others wait their turn in arrival order. One instance is
 * shared by every bulk chunk an instance works on, so BULK_CONCURRENCY bounds what it asks of the
 * provider however many jobs run.
 */
export class ConcurrencyLimit {
  private active = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(readonly max: number) {
    if (!Number.isInteger(max) || max < 1) throw new Error(`ConcurrencyLimit needs a positive integer, not ${max}`);
  }

  get running(): number {
    return this.active;
  }

  async run<T>(task: () => Promise<T>): Promise<T> {
    if (this.active >= this.max) await new Promise<void>((resolve) => this.waiting.push(resolve));
    else this.active += 1;
    try {
      return await task();
    } finally {
      const next = this.waiting.shift();
      // The slot passes straight to the next waiter, so `active` never dips and lets a newcomer jump the queue.
      if (next) next();
      else this.active -= 1;
    }
  }
}
