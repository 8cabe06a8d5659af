/**
 * Failover figures (issue 23): p50/p99 of cache-miss /filter calls with two upstreams
 * (LOOKUP_PROVIDERS=primary,backup: the hlr-lookups simulator, then the Twilio Lookup simulator, both at
 * SIMULATOR_LATENCY_MS and started here), while the primary is healthy, killed (connections refused) and
 * hanging (it accepts and never answers: each request a PROVIDER_TIMEOUT_MS timeout), against the backup
 * alone. Each outage is measured in periods of DURATION_SECONDS from its start: the first (attempts pay
 * the connect error or the timeout until the primary is demoted or its breaker opens), the next (asked
 * last: not asked while the backup answers) and, for the hanging one, a period started once its demotion
 * window is empty (one trial call pays the timeout). The service runs the default PROVIDER_* and LOOKUP_DEMOTE_* settings, in
 * memory (no REDIS_URL). Each row also says what the primary's attempts did (per-provider metrics).
 * Part of `npm run bench`; alone: `npm run bench:failover`.
 */
import { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { freePort } from '../../src/common/net';
import { migrate } from '../../src/database/database-runtime';
import { createBenchAccount, Figures, load, WARM_UP_SECONDS } from './service-load';
import { startChild, stopChild } from './processes';
import { benchDatabase, loadAverage, runMain } from './bench-main';

const SIMULATOR_LATENCY_MS = 100;

export interface FailoverRow extends Figures {
  /** What the primary's attempts did during the row (per-provider metrics): answers, failures by reason. */
  primary: string;
  /** Checks the backup answered during the row. */
  backupAnswers: number;
  /** The primary's state on /health/ready when the row ended. */
  primaryAtEnd: string;
}

interface Options {
  databaseUrl: string;
  adminToken: string;
  /** A block of numbers no other scenario uses (load-generator.ts phoneInBlock). */
  freshBlock: () => number;
}

/** The per-provider series of /metrics, by provider and label set. */
async function providerCounts(baseUrl: string): Promise<Map<string, number>> {
  const text = await (await fetch(`${baseUrl}/metrics`)).text();
  const counts = new Map<string, number>();
  for (const [, name, labels, value] of text.matchAll(/^phone_filter_provider_(answers|failures)_total\{([^}]*)\} (\S+)$/gm)) {
    const provider = /provider="([^"]+)"/.exec(labels)?.[1];
    const reason = /reason="([^"]+)"/.exec(labels)?.[1] ?? 'answered';
    const key = `${provider} ${name === 'answers' ? 'answered' : reason}`;
    counts.set(key, (counts.get(key) ?? 0) + Number(value));
  }
  return counts;
}

function describePrimary(before: Map<string, number>, after: Map<string, number>): { primary: string; backupAnswers: number } {
  const change = (key: string) => (after.get(key) ?? 0) - (before.get(key) ?? 0);
  const primary = [...after.keys()]
    .filter((key) => key.startsWith('primary ') && change(key) > 0)
    .map((key) => `${key.slice('primary '.length)} ${change(key)}`)
    .join(', ');
  return { primary: primary || 'not asked', backupAnswers: change('backup answered') };
}

/** The primary's entry of /health/ready at the end of a row: its state, breaker and window on the live lane. */
async function primaryState(baseUrl: string): Promise<string> {
  const body = (await (await fetch(`${baseUrl}/health/ready`)).json()) as {
    info?: { provider?: ProviderEntries };
    error?: { provider?: ProviderEntries };
    details?: { provider?: ProviderEntries };
  };
  const entries = body.details?.provider?.providers ?? body.info?.provider?.providers ?? body.error?.provider?.providers ?? [];
  const primary = entries.find((entry) => entry.provider === 'primary');
  if (!primary) return 'n/a';
  const recent = primary.recent?.interactive;
  const window = recent ? `, window ${recent.calls} calls, ${Math.round(recent.failure_rate * 100)}% failed, median ${recent.median_latency_ms ?? '-'} ms` : '';
  return `${primary.state}, breaker ${primary.circuit?.interactive ?? '-'}${window}`;
}

type ProviderEntries = {
  providers: Array<{
    provider: string;
    state: string;
    circuit?: { interactive: string };
    recent?: { interactive: { calls: number; failure_rate: number; median_latency_ms: number | null } };
  }>;
};

function startHlrSimulator(port: number, extra: string[] = []): Promise<ChildProcess> {
  return startChild('tools/upstream-simulator/main.ts', ['--port', String(port), '--latency-ms', String(SIMULATOR_LATENCY_MS), ...extra], {}, /listening/);
}

async function kill(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolveExit) => child.once('exit', resolveExit));
  child.kill('SIGKILL');
  await exited;
}

/** One service process with `providers`, its bench account, and a way to measure a row on it. */
async function startService(options: Options, env: Record<string, string>) {
  const port = await freePort();
  const baseUrl = `http://127.0.0.1:${port}`;
  const child = await startChild(
    'src/main.ts',
    [],
    {
      DATABASE_URL: options.databaseUrl,
      PORT: String(port),
      HOST: '127.0.0.1',
      ADMIN_TOKEN: options.adminToken,
      LOG_LEVEL: 'error',
      REDIS_URL: '',
      CACHE_KEY_PREFIX: `bench:${randomBytes(4).toString('hex')}:`,
      ...env,
    },
    `${baseUrl}/health/live`,
  );
  const apiKey = await createBenchAccount(options.databaseUrl, baseUrl, options.adminToken);
  const request = { url: `${baseUrl}/api/v1/filter`, method: 'POST' as const, headers: { Authorization: `Bearer ${apiKey}`, 'Content-Type': 'application/json' } };
  return {
    warmUp: async () => {
      await load('warm-up', { ...request, phoneBlock: options.freshBlock(), durationSeconds: WARM_UP_SECONDS });
      // The calls the load generator left when it stopped still run: let them end before a primary is killed.
      await new Promise((resolveWait) => setTimeout(resolveWait, 2000));
      if (process.env.BENCH_DEBUG) console.error(`after the warm-up: primary ${await primaryState(baseUrl)}`);
    },
    measure: async (scenario: string): Promise<FailoverRow> => {
      const before = await providerCounts(baseUrl);
      const figures = await load(scenario, { ...request, phoneBlock: options.freshBlock() });
      return { ...figures, ...describePrimary(before, await providerCounts(baseUrl)), primaryAtEnd: await primaryState(baseUrl) };
    },
    /** Waits until the primary's window on the live lane is empty (LOOKUP_DEMOTE_WINDOW_MS after its last attempt): the next call is its trial. */
    untilRecovering: async () => {
      while (!(await primaryState(baseUrl)).includes('window 0 calls')) await new Promise((resolveWait) => setTimeout(resolveWait, 500));
    },
    stop: () => stopChild(child),
  };
}

function twoProviders(primaryPort: number, backupPort: number): Record<string, string> {
  return {
    ...backupOnly(backupPort),
    LOOKUP_PROVIDERS: 'primary,backup',
    PRIMARY_ADAPTER: 'hlr-lookups',
    PRIMARY_URL: `http://127.0.0.1:${primaryPort}`,
    PRIMARY_KEY: 'sim-key',
    PRIMARY_SECRET: 'sim-secret',
  };
}

function backupOnly(backupPort: number): Record<string, string> {
  return {
    LOOKUP_PROVIDERS: 'backup',
    BACKUP_ADAPTER: 'twilio-lookup',
    BACKUP_URL: `http://127.0.0.1:${backupPort}`,
    BACKUP_KEY: 'ACsimulator',
    BACKUP_SECRET: 'sim-token',
  };
}

export async function runFailoverBenchmark(options: Options): Promise<FailoverRow[]> {
  const rows: FailoverRow[] = [];
  const backupPort = await freePort();
  const backup = await startChild('tools/twilio-simulator/main.ts', ['--port', String(backupPort), '--latency-ms', String(SIMULATOR_LATENCY_MS)], {}, /listening/);
  const children: ChildProcess[] = [backup];
  try {
    // Killed: connections refused once the process is gone.
    const killedPort = await freePort();
    const killed = await startHlrSimulator(killedPort);
    children.push(killed);
    const first = await startService(options, twoProviders(killedPort, backupPort));
    try {
      await first.warmUp();
      rows.push(await first.measure('primary healthy, backup up'));
      await kill(killed);
      rows.push(await first.measure('primary killed (connection refused): first period'));
      rows.push(await first.measure('primary killed: second period'));
    } finally {
      await first.stop();
    }

    // Hanging: the same port answers nothing (a healthy primary first, for the warm-up, then replaced).
    const hangingPort = await freePort();
    const healthy = await startHlrSimulator(hangingPort);
    children.push(healthy);
    const second = await startService(options, twoProviders(hangingPort, backupPort));
    try {
      await second.warmUp();
      await kill(healthy);
      children.push(await startHlrSimulator(hangingPort, ['--fault', 'slow', '--slow-ms', '600000']));
      rows.push(await second.measure('primary hanging (each request a 3 s timeout): first period'));
      rows.push(await second.measure('primary hanging: second period'));
      await second.untilRecovering();
      rows.push(await second.measure('primary hanging: once its demotion window is empty (one trial call)'));
    } finally {
      await second.stop();
    }

    const alone = await startService(options, backupOnly(backupPort));
    try {
      await alone.warmUp();
      rows.push(await alone.measure('backup alone (LOOKUP_PROVIDERS=backup): the floor'));
    } finally {
      await alone.stop();
    }
  } finally {
    for (const child of children) await kill(child);
  }
  return rows;
}

export function describeFailoverRows(rows: FailoverRow[]): string[] {
  return [
    `failover: cache-miss POST /api/v1/filter (network_status), both simulators at ${SIMULATOR_LATENCY_MS} ms, default PROVIDER_* and LOOKUP_DEMOTE_*`,
    '',
    '| scenario | req/s | p50 ms | p99 ms | p99.9 ms | non-2xx | primary attempts | backup answers | primary at the end (/health/ready) |',
    '|---|---:|---:|---:|---:|---:|---|---:|---|',
    ...rows.map((r) => `| ${r.scenario} | ${r.requestsPerSecond} | ${r.p50} | ${r.p99} | ${r.p99_9} | ${r.non2xx} | ${r.primary} | ${r.backupAnswers} | ${r.primaryAtEnd} |`),
  ];
}

async function main(): Promise<void> {
  const database = await benchDatabase();
  const databaseUrl = database.url;
  const loadBefore = loadAverage();
  try {
    await migrate(databaseUrl);
    let block = 59;
    const rows = await runFailoverBenchmark({ databaseUrl, adminToken: `bench-admin-${randomBytes(8).toString('hex')}`, freshBlock: () => ++block });
    console.log(describeFailoverRows(rows).join('\n'));
    console.log(`\nload average (1, 5, 15 min): before ${loadBefore}, after ${loadAverage()}`);
  } finally {
    await database.stop();
  }
}

if (require.main === module) runMain(main);
