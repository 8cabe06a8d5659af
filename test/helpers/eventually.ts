/** Polls `probe` until `accept` says yes or the time is up; returns the last value either way. */
export async function eventually<T>(probe: () => T | Promise<T>, accept: (value: T) => boolean, timeoutMs: number, everyMs = 100): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (accept(value) || Date.now() > deadline) return value;
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}
