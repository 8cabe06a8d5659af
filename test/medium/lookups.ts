import type { NumberReport } from '../../src/checks/check-registry';
import { LookupService } from '../../src/provider/lookup.service';
import type { Medium } from './medium';

/** A promise and the function that resolves it. */
export function deferred<T = void>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

export interface HeldLookups {
  /** The numbers looked up so far, in order (held ones included). */
  readonly started: string[];
  /** Resolves once `count` lookups have started. */
  startedAtLeast(count: number): Promise<void>;
  /** Lets every held lookup, and every later one, go on to the provider. */
  release(): void;
  restore(): void;
}

/** Holds the instance's lookups (each one waits before it goes to the provider) until `release()`: a round stays in its lookups. */
export function holdLookups(m: Medium, hold = true): HeldLookups {
  const lookups = m.get(LookupService);
  const original = lookups.lookUp.bind(lookups);
  const gate = deferred();
  if (!hold) gate.resolve();
  const started: string[] = [];
  const waiters: Array<{ count: number; resolve: () => void }> = [];
  const spy = jest.spyOn(lookups, 'lookUp').mockImplementation(async (...args: Parameters<LookupService['lookUp']>): Promise<NumberReport> => {
    started.push(args[0]);
    for (const waiter of waiters.filter((w) => started.length >= w.count)) waiter.resolve();
    await gate.promise;
    return original(...args);
  });
  return {
    started,
    startedAtLeast: (count) => (started.length >= count ? Promise.resolve() : new Promise((resolve) => waiters.push({ count, resolve }))),
    release: () => gate.resolve(),
    restore: () => spy.mockRestore(),
  };
}
