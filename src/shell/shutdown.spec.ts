import { installShutdown, SHUTDOWN_SIGNALS, ShutdownPlan, STOP_NOW_AFTER } from './shutdown';

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
        refundCutOff: async () => undefined,
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

describe('installShutdown: signals that repeat during a shutdown', () => {
  afterEach(() => {
    for (const signal of SHUTDOWN_SIGNALS) process.removeAllListeners(signal);
  });

  /** A shutdown whose drain ends when the test says; records what the plan was asked. */
  function plannedShutdown(cutOff = 0) {
    const calls: string[] = [];
    let endDrain!: () => void;
    let drainStarted!: () => void;
    const draining = new Promise<void>((resolve) => (drainStarted = resolve));
    let exitWith!: (code: number) => void;
    const exited = new Promise<number>((resolve) => (exitWith = resolve));
    const warnings: string[] = [];
    installShutdown(
      {
        timeoutMs: 60_000,
        requestsInFlight: () => 1,
        drain: () => {
          calls.push('drain');
          drainStarted();
          return new Promise<number>((resolve) => (endDrain = () => resolve(cutOff)));
        },
        refundCutOff: async () => void calls.push('refundCutOff'),
        started: async () => undefined,
        closeApp: async () => void calls.push('closeApp'),
        stopDatabase: async (budget) => void calls.push(`stopDatabase ${budget <= 1000 ? 'forced' : 'in order'}`),
        exit: (code) => exitWith(code),
      },
      { log: () => undefined, warn: (message: string) => warnings.push(message), error: () => undefined } as never,
    );
    return { calls, warnings, draining, exited, endDrain: () => endDrain() };
  }

  const send = (...signals: Array<(typeof SHUTDOWN_SIGNALS)[number]>) => signals.forEach((signal) => process.emit(signal, signal));

  it('a closing terminal (SIGHUP twice) and a forwarded Ctrl-C (SIGINT twice) do not cut it short: the requests finish, exit 0', async () => {
    const shutdown = plannedShutdown();
    send('SIGHUP');
    await shutdown.draining;
    send('SIGHUP', 'SIGINT', 'SIGINT');
    expect(shutdown.calls).toEqual(['drain']);
    shutdown.endDrain();
    expect(await shutdown.exited).toBe(0);
    expect(shutdown.calls).toEqual(['drain', 'closeApp', 'stopDatabase in order']);
    expect(shutdown.warnings).toEqual(Array(3).fill(expect.stringMatching(/again: the shutdown goes on \(the third SIGINT or SIGTERM stops at once\)/)));
  });

  it('SIGHUP never stops it at once, however often it comes', async () => {
    const shutdown = plannedShutdown();
    send('SIGHUP');
    await shutdown.draining;
    send(...Array<'SIGHUP'>(10).fill('SIGHUP'));
    shutdown.endDrain();
    expect(await shutdown.exited).toBe(0);
    expect(shutdown.calls).toEqual(['drain', 'closeApp', 'stopDatabase in order']);
  });

  it('the third SIGINT or SIGTERM (Ctrl-C pressed again under npm) stops at once: the database\'s short stop, exit 1', async () => {
    expect(STOP_NOW_AFTER).toBe(3);
    const shutdown = plannedShutdown();
    send('SIGINT');
    await shutdown.draining;
    send('SIGINT', 'SIGHUP');
    expect(shutdown.calls).toEqual(['drain']);
    send('SIGTERM');
    expect(await shutdown.exited).toBe(1);
    expect(shutdown.calls).toEqual(['drain', 'stopDatabase forced']);
    expect(shutdown.warnings.at(-1)).toMatch(/SIGTERM again: stopping now/);
  });

  it('calls cut off at the bound: their charges are given back before the app and its database pools close', async () => {
    const shutdown = plannedShutdown(2);
    send('SIGTERM');
    await shutdown.draining;
    shutdown.endDrain();
    expect(await shutdown.exited).toBe(0);
    expect(shutdown.calls).toEqual(['drain', 'refundCutOff', 'closeApp', 'stopDatabase in order']);
  });

  it('no call cut off: nothing to give back', async () => {
    const shutdown = plannedShutdown(0);
    send('SIGTERM');
    await shutdown.draining;
    shutdown.endDrain();
    expect(await shutdown.exited).toBe(0);
    expect(shutdown.calls).toEqual(['drain', 'closeApp', 'stopDatabase in order']);
  });
});
