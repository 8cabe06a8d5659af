import { Client } from 'pg';
import { freePort, ServiceProcess, startServiceProcess } from './helpers/service-process';

const ADMIN_TOKEN = 'redaction-admin-token_with-dashes-0123';

/**
 * Issue 24 #3: a database error whose PostgreSQL detail holds the account's row ("Failing row contains
 * (…)", webhook secret included) reached the error log, the secret redacted only up to its first `-` or
 * `_`. Reproduced on the real service: a constraint the row breaks (the path a null check took before
 * #2's fix), then the whole output searched for any fragment of the secret and for the driver detail.
 */
describe('logs: a failing row never leaks the webhook secret or the driver detail', () => {
  let service: ServiceProcess;
  let db: Client;
  const constraint = `redaction_test_${process.pid}`;

  beforeAll(async () => {
    db = new Client({ connectionString: process.env.DATABASE_URL });
    await db.connect();
    service = await startServiceProcess({ LOG_LEVEL: 'debug', ADMIN_TOKEN, PROVIDER: 'sandbox', REDIS_URL: undefined }, await freePort());
    await service.waitFor(/listening on/);
  }, 60_000);

  afterAll(async () => {
    await db?.query(`ALTER TABLE account_settings DROP CONSTRAINT IF EXISTS ${constraint}`);
    await db?.end();
    await service?.stop('SIGKILL');
  });

  it('logs the 500 with the code and without any fragment of the secret', async () => {
    const admin = { Authorization: `Bearer ${ADMIN_TOKEN}`, 'Content-Type': 'application/json' };
    const created = await fetch(`${service.baseUrl}/admin/v1/accounts`, { method: 'POST', headers: admin, body: JSON.stringify({ name: 'redaction', plan: 'standard', credits: 5 }) });
    expect(created.status).toBe(201);
    const { id, api_key: key } = (await created.json()) as { id: string; api_key: string };
    const customer = { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' };
    // A secret with '-' or '_' in it (about two in three are): rotate until one is.
    let secret = '';
    for (let i = 0; i < 40 && !/[-_]/.test(secret.slice('whsec_'.length)); i++) {
      const rotated = await fetch(`${service.baseUrl}/api/v1/settings/webhook-secret`, { method: 'POST', headers: customer });
      secret = ((await rotated.json()) as { webhook_secret: string }).webhook_secret;
    }
    expect(secret.slice('whsec_'.length)).toMatch(/[-_]/);

    await db.query(`ALTER TABLE account_settings ADD CONSTRAINT ${constraint} CHECK (account_id <> '${id}' OR daily_credit_limit IS DISTINCT FROM 424242) NOT VALID`);
    const failed = await fetch(`${service.baseUrl}/api/v1/settings`, { method: 'PATCH', headers: customer, body: JSON.stringify({ daily_credit_limit: 424242 }) });
    expect(failed.status).toBe(500);
    await service.waitFor(/"code":"23514"/);

    const output = service.output();
    expect(output).toContain(constraint); // the error that matters is logged, by its constraint
    expect(output).not.toMatch(/Failing row contains/);
    for (const piece of secret.slice('whsec_'.length).split(/[-_]/).filter((p) => p.length >= 4)) expect(output).not.toContain(piece);
    expect(output).not.toContain(key.slice('pf_live_'.length));
    expect(output).not.toContain(ADMIN_TOKEN);
  });
});
