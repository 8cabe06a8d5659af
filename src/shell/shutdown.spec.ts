import { installShutdown, ShutdownPlan } from './shutdown';

describe('installShutdown', () => {
  afterEach(() => {
    process.removeAllListeners('SIGTERM');
    process.removeAllListeners('SIGINT');
    process.removeAllListeners('SIGHUP');
  });

  it('keeps the whole shutdown inside SHUTDOWN_TIMEOUT_MS when closing the app hangs: the database gets what is left', async () => {
    const timeoutMs = 600;
    let exitCode: number | undefined;
    let databaseBudget: { calledAt: number; timeoutMs: number } | undefined;
    const exited = new Promise<void>((done) => {
      const plan: ShutdownPlan = {
        timeoutMs,
        requestsInFlight: () => 0,
        drain: async () => 0,
        started: async () => undefined,
        closeApp: () => new Promise<void>(() => undefined), // a pool that never answers
        stopDatabase: async (budget) => {
          databaseBudget = { calledAt: Date.now(), timeoutMs: budget };
        },
        exit: (code) => {
          exitCode = code;
          done();
        },
      };
      installShutdown(plan, { log: () => undefined, warn: () => undefined, error: () => undefined } as never);
    });
    const signalled = Date.now();
    process.emit('SIGTERM', 'SIGTERM');
    await exited;
    expect(exitCode).toBe(1);
    expect(databaseBudget!.timeoutMs).toBeGreaterThan(0);
    // When the database is killed at the latest: never after the deadline (timers may fire a few ms late).
    expect(databaseBudget!.calledAt + databaseBudget!.timeoutMs - signalled).toBeLessThanOrEqual(timeoutMs + 50);
  });
});
