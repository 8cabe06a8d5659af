import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import request from 'supertest';
import { withClient } from './global-setup';
import { testRedisUrl } from './helpers/redis';
import { freePort, ROOT, ServiceProcess, startServiceProcess } from './helpers/service-process';

/**
 * The README's shell examples that need no Docker, run as written by bash: only the address of the
 * service (localhost:3000 and friends), the database server and Redis are swapped for the test's
 * own, and the placeholders the text tells the reader to fill (ACCOUNT_ID, KEY_ID, $ID...) are filled.
 * `npm start`, `npm test`, the benchmark and the typed client have suites of their own.
 */
const ADMIN_TOKEN = 'readme-admin-token-0123456789';

/** The ```bash block of a document (README.md, docs/…) that contains `marker`. */
function bashBlock(marker: string, document = 'README.md'): string {
  const text = readFileSync(join(ROOT, document), 'utf8');
  const blocks = [...text.matchAll(/```bash\n([\s\S]*?)```/g)].map((match) => match[1]);
  const found = blocks.filter((block) => block.includes(marker));
  expect(found).toHaveLength(1);
  return found[0];
}

function replaceAll(script: string, substitutions: Record<string, string>): string {
  return Object.entries(substitutions).reduce((text, [from, to]) => text.split(from).join(to), script);
}

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function runBash(script: string, env: Record<string, string | undefined>, timeoutMs = 120_000): Promise<Run> {
  return new Promise((resolveRun, reject) => {
    // A process group of its own, killed at the end: nothing an example started outlives it.
    const child = spawn('bash', ['-e', '-o', 'pipefail', '-c', script], {
      cwd: ROOT,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    const killGroup = () => {
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        // the group is gone already
      }
    };
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const timer = setTimeout(() => {
      killGroup();
      reject(new Error(`README example timed out:\n${script}\n--- stdout\n${stdout}\n--- stderr\n${stderr}`));
    }, timeoutMs);
    child.on('exit', (code) => {
      clearTimeout(timer);
      killGroup();
      resolveRun({ code, stdout, stderr });
    });
  });
}

/** A script left running (a terminal of the tour), its output watched, its process group killed at the end. */
function spawnBash(script: string, env: Record<string, string | undefined>): { waitFor: (pattern: RegExp) => Promise<RegExpMatchArray>; kill: () => void } {
  const child = spawn('bash', ['-e', '-o', 'pipefail', '-c', script], { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let output = '';
  const listeners = new Set<() => void>();
  const onData = (chunk: Buffer) => {
    output += chunk.toString();
    for (const listener of listeners) listener();
  };
  child.stdout.on('data', onData);
  child.stderr.on('data', onData);
  const waitFor = (pattern: RegExp) =>
    new Promise<RegExpMatchArray>((resolveMatch, reject) => {
      const timer = setTimeout(() => reject(new Error(`Timed out waiting for ${pattern}:\n${output}`)), 240_000);
      const check = () => {
        const match = output.match(pattern);
        if (!match) return;
        listeners.delete(check);
        clearTimeout(timer);
        resolveMatch(match);
      };
      listeners.add(check);
      // 'close', not 'exit': the script ends after its last command while what it left in the background still writes.
      child.once('close', (code) => listeners.has(check) && (clearTimeout(timer), reject(new Error(`ended (${code}) before ${pattern}:\n${output}`))));
      check();
    });
  return {
    waitFor,
    kill: () => {
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        // already gone
      }
    },
  };
}

/** A database of its own on the test's server: the examples change plans, which other suites rely on. */
function databaseUrl(name: string): string {
  const url = new URL(process.env.DATABASE_URL!);
  url.pathname = `/${name}`;
  return url.toString();
}

async function dropDatabase(name: string): Promise<void> {
  await withClient(databaseUrl('postgres'), (client) => client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
}

/**
 * Two consecutive free ports: the example spreads calls over `$((3001 + i % 2))`. Taken below the range the
 * kernel hands out for port 0 and for client sockets (32768 and up, ip_local_port_range), so that no other file
 * running meanwhile can be given the second one while the example builds and starts the first (a CI run's
 * second instance found its port taken: "Port … is already in use").
 */
async function twoFreePorts(): Promise<number> {
  const free = (port: number) =>
    new Promise<boolean>((resolveFree) => {
      const server = createServer();
      server.once('error', () => resolveFree(false));
      server.listen(port, '0.0.0.0', () => server.close(() => resolveFree(true)));
    });
  for (;;) {
    const port = 20_000 + 2 * Math.floor(Math.random() * 6_000);
    if ((await free(port)) && (await free(port + 1))) return port;
  }
}

/** An answer matches its comment; a string ending in "…" there stands for any text with that start. */
function expectAnswer(actual: unknown, documented: unknown): void {
  if (typeof documented === 'string' && documented.endsWith('…')) {
    expect(typeof actual === 'string' && actual.startsWith(documented.slice(0, -1))).toBe(true);
  } else if (documented !== null && typeof documented === 'object') {
    expect(Object.keys(actual as object).sort()).toEqual(Object.keys(documented).sort());
    for (const [key, value] of Object.entries(documented)) expectAnswer((actual as Record<string, unknown>)[key], value);
  } else {
    expect(actual).toEqual(documented);
  }
}

/** The JSON answers a block's comments document (`# {…}` or `# 202 {…}`), in order. */
function documentedAnswers(block: string): unknown[] {
  return [...block.matchAll(/^# (?:\d{3} )?(\{.*\})$/gm)].map(([, json]) => JSON.parse(json) as unknown);
}

describe('README and docs/ shell examples', () => {
  const database = `phone_filter_readme_${randomBytes(4).toString('hex')}`;
  let service: ServiceProcess;
  let port: number;

  beforeAll(async () => {
    await withClient(databaseUrl('postgres'), (client) => client.query(`CREATE DATABASE ${database}`));
    port = await freePort();
    // The built service, as `npm start` runs it (seconds faster to start than src/ through ts-node).
    service = await startServiceProcess({ DATABASE_URL: databaseUrl(database), ADMIN_TOKEN, REDIS_URL: undefined }, port, { compiled: true });
    await service.waitFor(/listening on/);
  }, 90_000);
  afterAll(async () => {
    await service?.stop();
    await dropDatabase(database);
  });

  const local = () => ({ 'localhost:3000': `localhost:${port}` });

  async function newAccount(plan = 'standard', credits = 100, baseUrl = service.baseUrl): Promise<{ id: string; api_key: string }> {
    const created = await request(baseUrl)
      .post('/admin/v1/accounts')
      .set('Authorization', `Bearer ${ADMIN_TOKEN}`)
      .send({ name: 'README reader', plan, credits });
    expect(created.status).toBe(201);
    return created.body as { id: string; api_key: string };
  }

  it("README's tour pastes and works in order: steps 1 to 3 in one shell, 4 with the service restarted with the switch, 5", async () => {
    // Its own service on its own port (step 4 restarts it), on a database of its own: on the file's, the file's
    // service (started without CALLBACK_ALLOW_PRIVATE_NETWORKS) works the same bulk queue and callback outbox,
    // and when it took step 4's job or callback it refused the private address: no callback ever came (two
    // clean-clone CI runs). The demo key is an account like the one made here through the admin API.
    const tourDatabase = `${database}_tour`;
    await withClient(databaseUrl('postgres'), (client) => client.query(`CREATE DATABASE ${tourDatabase}`));
    const tourPort = await freePort();
    const receiverPort = await freePort();
    const swap = {
      'localhost:3000': `localhost:${tourPort}`,
      'localhost:4000': `localhost:${receiverPort}`,
      '127.0.0.1:4000': `127.0.0.1:${receiverPort}`,
      'npm run -s webhook-receiver': `npm run -s webhook-receiver -- --port ${receiverPort}`,
    };
    const serviceEnv = { DATABASE_URL: databaseUrl(tourDatabase), REDIS_URL: undefined, ADMIN_TOKEN };
    const first = await startServiceProcess(serviceEnv, tourPort, { compiled: true });
    let second: ServiceProcess | undefined;
    try {
      await first.waitFor(/listening on/);
      const account = await newAccount('standard', 1000, first.baseUrl);
      const env = { API_KEY: account.api_key, DATABASE_URL: databaseUrl(tourDatabase) };
      // Steps 1 to 3, in one shell as a reader pastes them one after the other (JOB_ID carries over).
      const steps = ['+447400120005', '"portability":true', 'JOB_ID=$('].map((marker) => bashBlock(marker));
      // One answer a line: each curl followed by a newline, its exit status kept (step 3's until loop waits on it).
      const run = await runBash(`curl() { command curl "$@"; local code=$?; echo; return $code; }\n${replaceAll(steps.join('\n'), swap)}`, env);
      expect(run).toMatchObject({ code: 0, stderr: '' });
      const lines = run.stdout.trim().split('\n').filter((line) => line !== '');
      const json = (index: number) => JSON.parse(lines[index]) as Record<string, unknown>;
      // 1: 0005 answers CONNECTED, then ABSENT when looked up again (Cache-Control: no-cache).
      expect([json(0).status, json(1).status]).toEqual(['CONNECTED', 'ABSENT']);
      // 2: with portability on, 0002 is ported; three calls cost 4 + 4 + 7.
      expect(json(2)).toMatchObject({ checks: { line_type: true, portability: true } });
      expect(json(3)).toMatchObject({ status: 'CONNECTED', is_ported: true });
      expect(json(4)).toEqual({ balance: 1000 - 15 });
      // 3: the quote, the job's id, then its CSV once completed (the 409s before it are silent: curl -f).
      expect(json(5)).toMatchObject({ total: 3 });
      const [, jobId] = lines[6].match(/^job ([0-9a-f-]{36})$/)!;
      const csv = lines.slice(7);
      expect(csv[0]).toMatch(/^phone,reference,country,valid,status,carrier,line_type,is_ported,/);
      expect(csv.slice(1).map((row) => row.split(',')[0])).toEqual(['+447400123456', '+447400120000', '+447400120002', 'not a number']);
      const job = await request(first.baseUrl).get(`/api/v1/filter/bulk/${jobId}`).set('Authorization', `Bearer ${account.api_key}`);
      expect(job.body).toMatchObject({ status: 'completed', total: 4 });

      // 4: the first service stopped (Ctrl-C), the same command with the switch in its place, then the receiver and a job.
      expect(await first.stop('SIGINT')).toBe(0);
      const restart = bashBlock('CALLBACK_ALLOW_PRIVATE_NETWORKS=true npm start');
      expect(restart.trim()).toBe('CALLBACK_ALLOW_PRIVATE_NETWORKS=true npm start');
      second = await startServiceProcess({ ...serviceEnv, CALLBACK_ALLOW_PRIVATE_NETWORKS: 'true' }, tourPort, { compiled: true });
      await second.waitFor(/listening on/);
      const callback = spawnBash(replaceAll(bashBlock('npm run -s webhook-receiver &'), swap), env);
      try {
        // On a time-out, the service's own output goes with the failure (the job's work and its callback's delivery
        // are logged there): two clean-clone CI runs timed out here in their Node 20 pass, never when run alone.
        const [, body] = await callback.waitFor(/POST \/: signature OK\n {2}(\{.*\})/).catch((error: Error) => {
          throw new Error(`${error.message}\n--- the service's output\n${second!.output().slice(-8000)}`);
        });
        expect(JSON.parse(body)).toMatchObject({ status: 'completed', total: 1 });
      } finally {
        callback.kill();
      }

      // 5: the admin command line beside the running service.
      const admin = await runBash(bashBlock('npm run admin -- list-accounts'), { DATABASE_URL: databaseUrl(tourDatabase) });
      expect(admin.code).toBe(0);
      expect(admin.stdout).toContain('usage: npm run admin -- <command>');
      expect(admin.stdout).toMatch(/^account_id +name +plan +balance/m);
    } finally {
      await first.stop();
      await second?.stop();
      await dropDatabase(tourDatabase);
    }
  }, 400_000);

  it('the first example answers what its comment says', async () => {
    const block = bashBlock('-d \'{"phone": "+44 7400 123456", "source": "website"}\'');
    const expected = block.match(/^# (\{.*\})$/m)![1];
    const account = await newAccount();
    const run = await runBash(replaceAll(block, local()), { API_KEY: account.api_key });
    expect(run).toMatchObject({ code: 0, stderr: '' });
    expect(JSON.parse(run.stdout)).toEqual(JSON.parse(expected));
  });

  it.each([
    ['§3 settings: GET then PATCH, every field of the answer', 'curl -s localhost:3000/api/v1/settings -H'],
    ['§9 a bulk job from JSON', '-d \'{"phones":["+447400123456","+447400120000","not a number"],"source":"crm-import"}\''],
    ['§9 a bulk job from the shipped examples/contacts.csv', "--data-binary @examples/contacts.csv\n# 202"],
  ])('docs/api.md %s answers what its comments say', async (_name, marker) => {
    const block = bashBlock(marker, 'docs/api.md');
    const documented = documentedAnswers(block);
    expect(documented.length).toBeGreaterThan(0);
    const account = await newAccount();
    // One answer per line (each curl followed by a newline).
    const run = await runBash(`curl() { command curl "$@"; echo; }\n${replaceAll(block, local())}`, { API_KEY: account.api_key });
    expect(run).toMatchObject({ code: 0, stderr: '' });
    const answers = run.stdout.trim().split('\n').map((line) => JSON.parse(line) as unknown);
    expect(answers).toHaveLength(documented.length);
    answers.forEach((answer, index) => expectAnswer(answer, documented[index]));
  });

  it('docs/api.md §2 and §4: the call and the balance examples answer 200 with the documented fields', async () => {
    const account = await newAccount();
    const filter = await runBash(replaceAll(bashBlock('-d \'{"phone": "+44 7400 123456", "source": "website"}\'', 'docs/api.md'), local()), { API_KEY: account.api_key });
    expect(filter).toMatchObject({ code: 0, stderr: '' });
    expect(JSON.parse(filter.stdout)).toMatchObject({ country: 'GB', valid: true, status: 'CONNECTED', carrier: 'Three' });
    const balance = bashBlock('curl -s localhost:3000/api/v1/balance -H', 'docs/api.md');
    const run = await runBash(`curl() { command curl "$@"; echo; }\n${replaceAll(balance, local())}`, { API_KEY: account.api_key });
    expect(run).toMatchObject({ code: 0, stderr: '' });
    const [first, usage] = run.stdout.trim().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(first).toEqual({ balance: 96 });
    expect(usage).toMatchObject({ entries: expect.any(Array) });
  });

  it('the admin API examples run in order and answer without an error', async () => {
    const block = bashBlock('curl -s -X POST localhost:3000/admin/v1/accounts', 'docs/administration.md');
    const account = await newAccount('free', 0);
    const key = await request(service.baseUrl).post(`/admin/v1/accounts/${account.id}/keys`).set('Authorization', `Bearer ${ADMIN_TOKEN}`);
    // One answer per line (each curl followed by a newline): each one's JSON, no error body anywhere.
    const script = `curl() { command curl "$@"; echo; }\n${replaceAll(block, local())}`;
    const run = await runBash(script, { ADMIN_TOKEN, ID: account.id, KEY_ID: (key.body as { id: string }).id });
    expect(run).toMatchObject({ code: 0, stderr: '' });
    const answers = run.stdout.trim().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(answers).toHaveLength(11);
    for (const answer of answers) expect(answer).not.toHaveProperty('error');
    // The account listing, its usage and its controls come first, then the life of an account.
    expect(answers[0]).toMatchObject({ accounts: expect.any(Array), next_cursor: null });
    expect(answers[1]).toMatchObject({ entries: expect.any(Array) });
    expect(answers[2]).toMatchObject({ settings: { daily_credit_limit: 5000, webhook_url: 'https://example.com/hooks' } });
    expect(answers[3]).toMatchObject({ name: 'Acme Ltd', plan: 'standard', balance: 10000, api_key: expect.stringMatching(/^pf_live_/) });
    expect(answers[5]).toEqual({ balance: 500 });
    expect(answers[7]).toMatchObject({ status: 'revoked' });
    expect(answers[9]).toMatchObject({ name: 'standard', limit: 100, window_seconds: 1 });
  });

  it('the admin CLI examples run in order and exit 0', async () => {
    const block = bashBlock('npm run admin -- --help', 'docs/administration.md');
    const account = await newAccount('free', 0);
    const key = await request(service.baseUrl).post(`/admin/v1/accounts/${account.id}/keys`).set('Authorization', `Bearer ${ADMIN_TOKEN}`);
    const script = replaceAll(block, { ACCOUNT_ID: account.id, KEY_ID: (key.body as { id: string }).id });
    const run = await runBash(script, { DATABASE_URL: databaseUrl(database) }, 240_000);
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('The API key is shown only once');
    const shown = await request(service.baseUrl).get(`/admin/v1/accounts/${account.id}`).set('Authorization', `Bearer ${ADMIN_TOKEN}`);
    // top-up 5000, adjust -250, set-plan enterprise, disable-account: as the examples say.
    expect(shown.body).toMatchObject({ balance: 4750, plan: 'enterprise', disabled: true });
  }, 240_000);

  it('"Two local processes": one database, one Redis, the free plan\'s 5 calls shared by both', async () => {
    const block = bashBlock('PORT=3001 node --max-semi-space-size=64 dist/src/main &', 'docs/operations.md');
    const first = await twoFreePorts();
    const ownDatabase = `phone_filter_readme_two_${randomBytes(4).toString('hex')}`;
    const script = replaceAll(block, {
      'postgres://postgres@127.0.0.1:5432/phone_filter': databaseUrl(ownDatabase),
      'redis://127.0.0.1:6379': testRedisUrl(),
      '3001': String(first),
      '3002': String(first + 1),
    });
    try {
      const run = await runBash(script, { LOG_LEVEL: 'warn' }, 200_000);
      expect(run.code).toBe(0);
      expect(run.stdout).toContain(`created database "${ownDatabase}"`);
      const counts = Object.fromEntries([...run.stdout.matchAll(/^\s*(\d+) (\d{3})$/gm)].map(([, count, status]) => [status, Number(count)]));
      expect(counts).toEqual({ '200': 5, '429': 15 });
      // `kill %1 %2 && wait` stopped both.
      await expect(request(`http://127.0.0.1:${first}`).get('/health/live')).rejects.toThrow(/ECONNREFUSED/);
    } finally {
      await dropDatabase(ownDatabase);
    }
  }, 240_000);
});
