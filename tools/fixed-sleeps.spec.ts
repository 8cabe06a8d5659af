import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { findFixedSleeps, FixedSleep } from './fixed-sleeps';

/**
 * No fixed sleep in the tests (docs/development.md, "Tests that need time to pass"): a test moves the
 * injected Clock or waits on an event (a row, a log line, a metric) with a generous deadline. The ones
 * that remain are listed here, each by its file and a piece of its line, with why it must stay; a new
 * one fails this test until it is removed or listed with its reason.
 */
interface Allowed {
  file: string;
  line: string;
  why: string;
}

const ALLOWED: Allowed[] = [
  {
    file: 'test/helpers/eventually.ts',
    line: 'setTimeout(resolve, everyMs)',
    why: 'the poll interval of the helper that waits on an event (a row, a metric, an answer) up to a deadline: the wait ends when the event is seen, not after a set time',
  },
  {
    file: 'test/helpers/clock-pauses.ts',
    line: 'setTimeout(resolve, 5)',
    why: 'the poll of advanceWhilePaused while the code under test does real work (a statement) between two pauses on the ManualClock; it ends as soon as something waits on the clock',
  },
  {
    file: 'test/helpers/redis.ts',
    line: 'setTimeout(() => done(false), timeoutMs)',
    why: 'not a sleep: the deadline of a PING to find out whether a Redis answers, cleared as soon as it does',
  },
  {
    file: 'test/helpers/utc-day.ts',
    line: 'setTimeout(resolve, Number(left) + 1_000)',
    why: "only within 90 s of 00:00 UTC: a daily-cap test counts the day by PostgreSQL's own now(), which no test clock moves, so a test that would straddle midnight starts after it",
  },
  {
    file: 'test/faults/helpers/load.ts',
    line: 'await pause(RETRY_PAUSE_MS);',
    why: "the fault suite's load generator: a client's retry backoff against real instances being killed and restarted (a real client waits before retrying, it does not spin)",
  },
  {
    file: 'test/faults/helpers/load.ts',
    line: 'await pause(RETRY_PAUSE_MS); // an instance is down',
    why: 'the same load generator: pacing against an instance that is down, so the load does not spin on a refused connection',
  },
  {
    file: 'test/faults/upstream-health.e2e-spec.ts',
    line: 'const idleFor = (ms: number)',
    why: "the scenario is an idle gap in the service's own process (a child process, real time, no test clock reaches it): the breaker must forget calls older than its window",
  },
  {
    file: 'tools/upstream-simulator/simulator.ts',
    line: 'setTimeout(resolve, durationMs / pieces)',
    why: "the simulator's drip fault: an upstream that trickles its answer over real time is the behaviour under test",
  },
  {
    file: 'tools/bench/bulk.ts',
    line: 'setTimeout(resolve, 50)',
    why: 'a benchmark (not a test) polling a real service for its job to complete, paced so that polling costs little next to the job',
  },
  {
    file: 'tools/bench/watchlist.ts',
    line: 'setTimeout(resolve, 50)',
    why: 'a benchmark (not a test) polling a real service for its round to complete, paced like the bulk one',
  },
  {
    file: 'tools/bench/fixed-rate.ts',
    line: 'setTimeout(done, 50)',
    why: 'a benchmark (not a test): lets the measured process start its new loop-delay histogram after SIGUSR2 before the measured run',
  },
  {
    file: 'tools/bench/fixed-rate.ts',
    line: 'setTimeout(done, 100)',
    why: 'a benchmark (not a test): lets the measured process write its loop-delay file after SIGUSR2',
  },
  {
    file: 'tools/start/build-if-changed.mjs',
    line: 'Atomics.wait(',
    why: "the build's synchronous sleep, used only to wait for another build's lock in the same checkout",
  },
  {
    file: 'tools/start/build-if-changed.mjs',
    line: 'else sleep(100);',
    why: "the build waiting its turn: another build holds the checkout's lock (polled, with a deadline)",
  },
];

const ROOT = resolve(__dirname, '..');

const allows = (entry: Allowed, sleep: FixedSleep) => entry.file === sleep.file && sleep.text.includes(entry.line);

describe('fixed sleeps in the tests and tools', () => {
  const sleeps = findFixedSleeps(ROOT);

  it('has none but the listed ones, each with why it stays', () => {
    const unlisted = sleeps.filter((sleep) => !ALLOWED.some((entry) => allows(entry, sleep)));
    expect(unlisted.map((sleep) => `${sleep.file}:${sleep.line} ${sleep.text}`)).toEqual([]);
  });

  it('lists nothing that is gone (a removed sleep leaves the list too)', () => {
    const stale = ALLOWED.filter((entry) => !sleeps.some((sleep) => allows(entry, sleep)));
    expect(stale).toEqual([]);
    for (const entry of ALLOWED) expect(entry.why.length).toBeGreaterThan(40);
  });

  it('finds the spellings of a fixed sleep, and not a clock that the test moves', () => {
    const root = mkdtempSync(join(tmpdir(), 'fixed-sleeps-'));
    try {
      mkdirSync(join(root, 'test'));
      mkdirSync(join(root, 'tools'));
      writeFileSync(
        join(root, 'test', 'planted.e2e-spec.ts'),
        [
          'await new Promise((resolve) => setTimeout(resolve, 200));',
          'await new Promise((r) => setTimeout(() => r(undefined), 50));',
          'await sleep(1000);',
          "import { setTimeout as wait } from 'node:timers/promises';",
          'await m.clock.advance(1000);',
          'await clock.sleep(1000);',
          '// await sleep(1000) in a comment',
        ].join('\n'),
      );
      expect(findFixedSleeps(root).map((sleep) => sleep.line)).toEqual([1, 2, 3, 4]);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
