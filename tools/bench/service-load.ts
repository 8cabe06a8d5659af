/** What every scenario of `npm run bench` shares: the load generator in a process of its own, and the bench account. */
import { spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { Client } from 'pg';
import type { LoadFigures, LoadRequest } from './load-generator';
import { ROOT } from './processes';

export const DURATION_SECONDS = Number(process.env.BENCH_DURATION ?? 10);
export const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 50);
export const WARM_UP_SECONDS = Number(process.env.BENCH_WARM_UP ?? 5);

export interface Figures extends LoadFigures {
  scenario: string;
}

/** Runs the load generator (a process of its own, see load-generator.ts) and returns its figures. */
export async function load(scenario: string, request: Omit<LoadRequest, 'connections' | 'durationSeconds'> & { durationSeconds?: number }): Promise<Figures> {
  const generator = spawn(process.execPath, [resolve(ROOT, 'dist/tools/bench/load-generator.js'), JSON.stringify({ connections: CONNECTIONS, durationSeconds: DURATION_SECONDS, ...request })], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let output = '';
  generator.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const code = await new Promise<number | null>((resolveExit) => generator.once('exit', resolveExit));
  if (code !== 0) throw new Error(`the load generator failed (${code}) for ${scenario}`);
  return { scenario, ...(JSON.parse(output) as LoadFigures) };
}

/** An account on a plan without a practical rate limit and with credits for any run; its API key. */
export async function createBenchAccount(databaseUrl: string, baseUrl: string, adminToken: string): Promise<string> {
  const db = new Client({ connectionString: databaseUrl });
  await db.connect();
  await db.query(
    `INSERT INTO plans (name, "limit", window_seconds) VALUES ('bench', 10000000, 1)
     ON CONFLICT (name) DO UPDATE SET "limit" = EXCLUDED."limit"`,
  );
  await db.end();
  const res = await fetch(`${baseUrl}/admin/v1/accounts`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${adminToken}`, 'Content-Type': 'application/json' },
    body: JSON.stringify({ name: `bench ${new Date().toISOString()}`, plan: 'bench', credits: 1_000_000_000 }),
  });
  if (res.status !== 201) throw new Error(`creating the bench account failed: ${res.status} ${await res.text()}`);
  return ((await res.json()) as { api_key: string }).api_key;
}
