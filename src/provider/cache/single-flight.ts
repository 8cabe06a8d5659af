/**
 * Collapses concurrent calls with the same key into one: while a call for a key is running, later
 * callers get the same promise. Nothing is remembered after it settles (that is the cache's job).
 * Per process: with several instances each runs its own flight, which the shared cache then absorbs.
 */
export class SingleFlight {
  private readonly inFlight = new Map<string, Promise<unknown>>();

  /** `shared` tells whether this caller joined a call already under way. */
  run<T>(key: string, work: () => Promise<T>): { promise: Promise<T>; shared: boolean } {
    const running = this.inFlight.get(key) as Promise<T> | undefined;
    if (running) return { promise: running, shared: true };
    const promise = work().finally(() => this.inFlight.delete(key));
    this.inFlight.set(key, promise);
    return { promise, shared: false };
  }

  get size(): number {
    return this.inFlight.size;
  }
}
