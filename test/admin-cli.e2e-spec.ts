import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join, relative, resolve } from 'node:path';
import request from 'supertest';
import { createAccount } from './factories/accounts';
import { cli, cliWith, field } from './helpers/admin-cli';
import { eventually } from './helpers/eventually';
import { startTestApp, TestApp } from './helpers/test-app';

/**
 * Another process changed the key: this instance's auth cache forgets it (its entries live 1 s), and the
 * key's next call answers `wanted`. Waited for, not timed: a busy machine may take longer to ask.
 */
function statusOnceForgotten(t: TestApp, apiKey: string, wanted: number): Promise<number> {
  const status = async () => (await request(t.http).get('/api/v1/balance').set({ Authorization: `Bearer ${apiKey}` })).status;
  return eventually(status, (answered) => answered === wanted, 60_000, 50);
}

const CLI_ACTOR = `cli:${userInfo().username}`;

describe('admin CLI (npm run admin)', () => {
  let t: TestApp;
  beforeAll(async () => (t = await startTestApp({ ADMIN_TOKEN: 'test-admin-token-0123456789' })));
  afterAll(() => t.close());

  it('erase removes a number from every store and leaves an audit row naming it only by its keyed hash', async () => {
    const account = await createAccount(t, { credits: 100 });
    await request(t.http).post('/api/v1/filter').set(account.auth).set('Idempotency-Key', 'cli-erase').send({ phone: '+447400208001' }).expect(200);
    const run = await cli('erase', '+44 7400 208001', '--json');
    expect(run.code).toBe(0);
    const erased = JSON.parse(run.stdout);
    expect(erased).toMatchObject({ idempotency_keys_erased: 1, phone_hash: expect.stringMatching(/^[0-9a-f]{64}$/) });
    const [row] = await t.db.query(`SELECT actor, action, target_type, target_id, after::text AS after FROM admin_audit WHERE target_id = $1`, [erased.phone_hash]);
    expect(row).toMatchObject({ actor: CLI_ACTOR, action: 'phone.erase', target_type: 'phone' });
    expect(JSON.stringify(row)).not.toContain('7400208001');
    const bad = await cli('erase', '12345');
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('E.164');
  });

  it('runs a command on the admin operations alone: no express, Swagger, controller, upstream adapter or queue is loaded', async () => {
    // What the process required, listed when it exits (Node's own module cache): the command's start-up
    // cost is its module graph (issue 36), which the HTTP side must not grow again.
    const folder = mkdtempSync(join(tmpdir(), 'pf-cli-graph-'));
    try {
      const listed = join(folder, 'loaded.json');
      const recorder = join(folder, 'record-loaded.js');
      writeFileSync(recorder, `process.on('exit', () => require('node:fs').writeFileSync(${JSON.stringify(listed)}, JSON.stringify(Object.keys(require.cache))));\n`);
      const run = await cliWith({ NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --require ${recorder}` }, 'erase', '+447400208009', '--json');
      expect(run.code).toBe(0);
      const root = resolve(__dirname, '..');
      const loaded = (JSON.parse(readFileSync(listed, 'utf8')) as string[]).map((file) => relative(root, file));
      const packages = new Set(loaded.map((file) => /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(file)?.[1]).filter((name) => name !== undefined));
      const own = loaded.filter((file) => file.startsWith('dist/'));
      // It did load what the command needs…
      expect(own).toEqual(expect.arrayContaining(['dist/src/admin/admin.service.js', 'dist/src/admin/erasure.service.js', 'dist/src/provider/lookup-cache-eraser.js']));
      expect([...packages]).toEqual(expect.arrayContaining(['@nestjs/core', 'typeorm', 'pg', 'ioredis']));
      // …and nothing of HTTP, the upstreams or the background work.
      const http = ['express', 'body-parser', '@nestjs/platform-express', '@nestjs/swagger', 'swagger-ui-dist', '@nestjs/throttler', '@nestjs/terminus'];
      const upstreams = ['zod', 'cockatiel', 'undici', 'pg-boss'];
      expect([...packages].filter((name) => http.includes(name) || upstreams.includes(name))).toEqual([]);
      expect(own.filter((file) => /\.(controller|dto|guard)\.js$/.test(file) || file.includes('/provider/adapters/') || file.endsWith('app.module.js'))).toEqual([]);
    } finally {
      rmSync(folder, { recursive: true, force: true });
    }
  });

  it('--help lists every command and exits 0; <command> --help shows its usage', async () => {
    const [global, perCommand, bare] = await Promise.all([cli('--help'), cli('top-up', '--help'), cli()]);
    expect(global.code).toBe(0);
    for (const command of ['create-account', 'issue-key', 'revoke-key', 'top-up', 'adjust', 'set-plan', 'disable-account', 'enable-account', 'show-account', 'list-plans', 'update-plan']) {
      expect(global.stdout).toContain(`  ${command} `);
    }
    expect(perCommand.code).toBe(0);
    expect(perCommand.stdout).toContain('usage: npm run admin -- top-up ACCOUNT_ID AMOUNT [--reason TEXT] [--json]');
    expect(bare.code).toBe(2);
    expect(bare.stderr).toContain('usage: npm run admin -- <command>');
  });

  it('exits 2 with a clear message on stderr for usage errors, before touching the database', async () => {
    const cases: Array<[string[], RegExp]> = [
      [['frobnicate'], /unknown command "frobnicate"/],
      [['top-up', randomUUID()], /expected ACCOUNT_ID AMOUNT/],
      [['top-up', randomUUID(), 'ten'], /AMOUNT must be a positive integer, got "ten"/],
      [['top-up', randomUUID(), '-5'], /AMOUNT must be a positive integer, got "-5"/],
      [['adjust', randomUUID(), '-5'], /--reason is required/],
      [['create-account'], /--name is required/],
      [['create-account', '--name', 'A', '--credits', '1.5'], /credits must be an integer >= 0/],
      [['create-account', '--name', 'A', '--colour', 'red'], /unknown option --colour/],
      [['update-plan', 'free', '--limit', '0', '--window', '1'], /--limit must be a positive integer/],
    ];
    const runs = await Promise.all(cases.map(([args]) => cli(...args)));
    runs.forEach((run, i) => {
      expect({ args: cases[i][0], code: run.code, stdout: run.stdout }).toEqual({ args: cases[i][0], code: 2, stdout: '' });
      expect(run.stderr).toMatch(cases[i][1]);
    });
    const json = await cli('top-up', 'x', '--json');
    expect(json.code).toBe(2);
    expect(JSON.parse(json.stderr)).toEqual({ error: { code: 'USAGE', message: expect.stringContaining('expected ACCOUNT_ID AMOUNT') } });
  });

  it('create-account prints the account id and a working API key', async () => {
    const run = await cli('create-account', '--name', 'CLI Corp', '--plan', 'standard', '--credits', '1234');
    expect(run).toMatchObject({ code: 0, stderr: '' });
    const id = field(run.stdout, 'account_id');
    const apiKey = field(run.stdout, 'api_key');
    expect(apiKey).toMatch(/^pf_live_[0-9A-Za-z]{32}$/);
    expect(field(run.stdout, 'plan')).toBe('standard');
    expect(field(run.stdout, 'balance')).toBe('1234');
    expect(run.stdout).toContain('shown only once');

    const balance = await request(t.http).get('/api/v1/balance').set({ Authorization: `Bearer ${apiKey}` });
    expect(balance.body).toEqual({ balance: 1234 });
    const account = await t.admin.getAccount(id);
    expect(account).toMatchObject({ name: 'CLI Corp', plan: 'standard', balance: 1234, keys: [{ status: 'active' }] });
    const audit = await t.admin.listAudit({ target_id: id });
    expect(audit.entries).toMatchObject([{ action: 'account.create', actor: CLI_ACTOR, request_id: null }]);
  });

  it('create-account --json prints one JSON object for scripts', async () => {
    const run = await cli('create-account', '--name', 'Scripted', '--json');
    expect(run.code).toBe(0);
    const created = JSON.parse(run.stdout);
    expect(created).toEqual({ id: expect.any(String), name: 'Scripted', plan: 'free', balance: 0, api_key: expect.stringMatching(/^pf_live_/) });
    expect((await request(t.http).get('/api/v1/balance').set({ Authorization: `Bearer ${created.api_key}` })).body).toEqual({ balance: 0 });
  });

  it('issue-key prints a new working key; revoke-key revokes it (refused within a second) and leaves the others alone', async () => {
    const account = await createAccount(t, { credits: 5 });
    const issued = await cli('issue-key', account.id, '--json');
    expect(issued.code).toBe(0);
    const key = JSON.parse(issued.stdout);
    expect(key).toEqual({ id: expect.any(String), account_id: account.id, prefix: key.api_key.slice(0, 12), api_key: expect.stringMatching(/^pf_live_/) });
    expect((await request(t.http).get('/api/v1/balance').set({ Authorization: `Bearer ${key.api_key}` })).status).toBe(200);

    const revoked = await cli('revoke-key', key.id);
    expect(revoked).toMatchObject({ code: 0, stderr: '' });
    expect(field(revoked.stdout, 'key_id')).toBe(key.id);
    expect(field(revoked.stdout, 'status')).toBe('revoked');
    expect(await statusOnceForgotten(t, key.api_key, 401)).toBe(401);
    const refused = await request(t.http).get('/api/v1/balance').set({ Authorization: `Bearer ${key.api_key}` });
    expect(refused.body.error.code).toBe('REVOKED_API_KEY');
    expect((await request(t.http).get('/api/v1/balance').set(account.auth)).status).toBe(200);
  });

  it('rotate-webhook-secret prints the new secret, which the API shows at once; the audit trail holds neither secret', async () => {
    const account = await createAccount(t, { credits: 0 });
    const before = (await request(t.http).get('/api/v1/settings').set(account.auth)).body.webhook_secret as string;
    const run = await cli('rotate-webhook-secret', account.id);
    expect(run).toMatchObject({ code: 0, stderr: '' });
    const secret = field(run.stdout, 'webhook_secret');
    expect(secret).toMatch(/^whsec_/);
    expect(secret).not.toBe(before);
    expect(Date.parse(field(run.stdout, 'previous_secret_valid_until'))).toBeGreaterThan(Date.now() + 23 * 3600_000);
    expect((await request(t.http).get('/api/v1/settings').set(account.auth)).body.webhook_secret).toBe(secret);
    const audit = JSON.stringify(await t.admin.listAudit({ target_id: account.id }));
    expect(audit).toContain('account.webhook_secret.rotate');
    expect(audit).not.toContain(secret);
    expect(audit).not.toContain(before);
    expect((await cli('rotate-webhook-secret', randomUUID())).code).toBe(1);
  });

  it('top-up adds exactly the amount with a ledger row naming the CLI user; balance = ledger sum', async () => {
    const account = await createAccount(t, { credits: 100 });
    const run = await cli('top-up', account.id, '250', '--reason', 'invoice 9');
    expect(run).toMatchObject({ code: 0, stderr: '' });
    expect(field(run.stdout, 'balance')).toBe('350');
    expect((await request(t.http).get('/api/v1/balance').set(account.auth)).body).toEqual({ balance: 350 });
    const [sum] = await t.db.query(`SELECT SUM(amount)::int AS sum FROM ledger_entries WHERE account_id = $1`, [account.id]);
    expect(sum.sum).toBe(350);
    const [row] = await t.db.query(`SELECT type, amount::int AS amount, reason, actor FROM ledger_entries WHERE account_id = $1 ORDER BY id DESC LIMIT 1`, [account.id]);
    expect(row).toEqual({ type: 'TOPUP', amount: 250, reason: 'invoice 9', actor: CLI_ACTOR });
  });

  it('adjust moves the balance down, and exits 1 changing nothing when it would go below zero', async () => {
    const account = await createAccount(t, { credits: 100 });
    const down = await cli('adjust', account.id, '-40', '--reason', 'goodwill reversal', '--json');
    expect(down.code).toBe(0);
    expect(JSON.parse(down.stdout)).toEqual({ account_id: account.id, balance: 60 });

    const refused = await cli('adjust', account.id, '-61', '--reason', 'too much');
    expect(refused.code).toBe(1);
    expect(refused.stdout).toBe('');
    expect(refused.stderr).toMatch(/^error: amount -61 would take the balance \(60\) below zero\.$/m);
    expect((await request(t.http).get('/api/v1/balance').set(account.auth)).body).toEqual({ balance: 60 });
    const [sum] = await t.db.query(`SELECT SUM(amount)::int AS sum FROM ledger_entries WHERE account_id = $1`, [account.id]);
    expect(sum.sum).toBe(60);
  });

  it('set-plan changes the plan; an unknown plan or account exits 1 with the reason on stderr', async () => {
    const account = await createAccount(t, { plan: 'free' });
    const run = await cli('set-plan', account.id, 'enterprise');
    expect(run).toMatchObject({ code: 0, stderr: '' });
    expect(field(run.stdout, 'plan')).toBe('enterprise');
    expect((await request(t.http).get(`/admin/v1/accounts/${account.id}`).set({ Authorization: 'Bearer test-admin-token-0123456789' })).body.plan).toBe('enterprise');
    const audit = await t.admin.listAudit({ target_id: account.id });
    expect(audit.entries[0]).toMatchObject({ action: 'account.update', actor: CLI_ACTOR, before: { plan: 'free' }, after: { plan: 'enterprise' } });

    const [badPlan, badAccount, badAccountJson] = await Promise.all([
      cli('set-plan', account.id, 'platinum'),
      cli('set-plan', randomUUID(), 'free'),
      cli('show-account', 'not-an-id', '--json'),
    ]);
    expect(badPlan).toMatchObject({ code: 1, stdout: '' });
    expect(badPlan.stderr).toMatch(/^error: plan must be one of .*\bstandard\b.*\.$/m); // other suites add plans of their own
    expect(badAccount).toMatchObject({ code: 1, stdout: '' });
    expect(badAccount.stderr).toMatch(/error: No account [0-9a-f-]{36}\./);
    expect(badAccountJson.code).toBe(1);
    expect(JSON.parse(badAccountJson.stderr)).toEqual({ error: { code: 'NOT_FOUND', message: 'No account not-an-id.' } });
  });

  it('disable-account refuses the keys (within a second), enable-account lets them in; show-account --json shows it', async () => {
    const account = await createAccount(t, { credits: 3 });
    expect((await cli('disable-account', account.id)).code).toBe(0);
    expect(await statusOnceForgotten(t, account.apiKey, 401)).toBe(401);
    const shown = await cli('show-account', account.id, '--json');
    expect(shown.code).toBe(0);
    expect(JSON.parse(shown.stdout)).toMatchObject({ id: account.id, disabled: true, balance: 3, keys: [{ status: 'active' }] });
    expect(shown.stdout).not.toContain(account.apiKey);

    expect((await cli('enable-account', account.id)).code).toBe(0);
    expect(await statusOnceForgotten(t, account.apiKey, 200)).toBe(200);
  });

  it('list-plans and update-plan read and change the plans', async () => {
    const plan = `t-${randomUUID().slice(0, 8)}`;
    await t.db.query(`INSERT INTO plans (name, "limit", window_seconds) VALUES ($1, 9, 1)`, [plan]);
    const updated = await cli('update-plan', plan, '--limit', '12', '--window', '3', '--json');
    expect(updated.code).toBe(0);
    expect(JSON.parse(updated.stdout)).toEqual({ name: plan, limit: 12, window_seconds: 3, max_watched_numbers: 10_000 });
    const watched = await cli('update-plan', plan, '--limit', '12', '--window', '3', '--max-watched', '500', '--json');
    expect(JSON.parse(watched.stdout)).toEqual({ name: plan, limit: 12, window_seconds: 3, max_watched_numbers: 500 });
    const listed = await cli('list-plans');
    expect(listed.code).toBe(0);
    expect(listed.stdout).toMatch(/^plan\s+limit\s+window_seconds\s+max_watched_numbers$/m);
    expect(listed.stdout).toMatch(/^free\s+5\s+1\s+10000$/m);
    expect(listed.stdout).toMatch(new RegExp(`^${plan}\\s+12\\s+3\\s+500$`, 'm'));
    const missing = await cli('update-plan', 'platinum', '--limit', '1', '--window', '1');
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('No plan named "platinum"');
  });
});
