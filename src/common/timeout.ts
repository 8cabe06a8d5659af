/**
 * `work`, or a rejection with `onTimeout()` once `ms` have passed without an answer. The work itself
 * goes on (a promise cannot be cancelled); only the wait ends.
 */
export function withTimeout<T>(work: Promise<T>, ms: number, onTimeout: () => Error = () => new Error(`no answer within ${ms} ms`)): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(onTimeout()), ms);
  });
  return Promise.race([work, deadline]).finally(() => clearTimeout(timer));
}
