/**
 * What the service is busy closing right now, so that a shutdown that runs out of time can say what
 * it gave up on (a database, Redis or queue that no longer answers). Hooks wrap their closing work.
 */
const running = new Set<string>();

export async function shutdownStep<T>(name: string, work: () => Promise<T>): Promise<T> {
  running.add(name);
  try {
    return await work();
  } finally {
    running.delete(name);
  }
}

export function shutdownStepsRunning(): string[] {
  return [...running];
}
