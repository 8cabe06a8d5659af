import { BUILT_IN_CHECKS } from '../checks/built-in-checks';
import { CheckRegistry } from '../checks/check-registry';
import { AppConfig } from './app-config';
import { ConfigurationError, validateEnvironment } from './environment';

describe('validateEnvironment', () => {
  it('applies the documented defaults', () => {
    const env = validateEnvironment({});
    const config = new AppConfig(env, 'postgres://x');
    expect(config.port).toBe(3000);
    expect(config.provider.upstreams).toEqual([{ id: 'sandbox', adapter: 'sandbox', baseUrl: '', key: '', secret: '', tokenUrl: '', price: 0 }]);
    // Prices and cache lifetimes: each check's definition names its variable and default (src/checks/).
    const checks = new CheckRegistry(BUILT_IN_CHECKS.map((definition) => ({ definition })), config.checkTuning);
    expect(Object.fromEntries(checks.names().map((name) => [name, checks.price(name)]))).toEqual({ network_status: 4, line_type: 1, portability: 2, sim_swap: 3 });
    expect(Object.fromEntries(checks.names().map((name) => [name, checks.cacheTtlSeconds(name)]))).toEqual({ network_status: 3600, portability: 86400, line_type: 2_592_000, sim_swap: 900 });
    expect(config.provider.timeoutMs).toBe(3000);
    expect(config.adminToken).toBeUndefined();
    expect(config.redisUrl).toBeUndefined();
  });

  it('LOOKUP_CALL_BUDGET_MS: 8000 by default, a whole number of milliseconds from 100', () => {
    expect(new AppConfig(validateEnvironment({}), 'postgres://x').provider.callBudgetMs).toBe(8000);
    expect(new AppConfig(validateEnvironment({ LOOKUP_CALL_BUDGET_MS: '2500' }), 'postgres://x').provider.callBudgetMs).toBe(2500);
    expect(() => validateEnvironment({ LOOKUP_CALL_BUDGET_MS: '50' })).toThrow(/LOOKUP_CALL_BUDGET_MS/);
    expect(() => validateEnvironment({ LOOKUP_CALL_BUDGET_MS: 'soon' })).toThrow(/LOOKUP_CALL_BUDGET_MS/);
  });

  it('LOOKUP_DEMOTE_*: documented defaults, each validated, the minimum within the window, every mistake named', () => {
    expect(new AppConfig(validateEnvironment({}), 'postgres://x').provider.demotion).toEqual({
      windowMs: 30000,
      windowCalls: 20,
      minCalls: 10,
      failureRate: 0.5,
      latencyMs: 2000,
    });
    const set = validateEnvironment({
      LOOKUP_DEMOTE_WINDOW_MS: '5000',
      LOOKUP_DEMOTE_WINDOW_CALLS: '8',
      LOOKUP_DEMOTE_MIN_CALLS: '8',
      LOOKUP_DEMOTE_FAILURE_RATE: '0.25',
      LOOKUP_DEMOTE_LATENCY_MS: '300',
    });
    expect(new AppConfig(set, 'postgres://x').provider.demotion).toEqual({ windowMs: 5000, windowCalls: 8, minCalls: 8, failureRate: 0.25, latencyMs: 300 });
    const problems = (() => {
      try {
        validateEnvironment({ LOOKUP_DEMOTE_WINDOW_MS: '10', LOOKUP_DEMOTE_FAILURE_RATE: '2', LOOKUP_DEMOTE_LATENCY_MS: 'slow' });
      } catch (error) {
        return (error as Error).message;
      }
      return '';
    })();
    expect(problems).toMatch(/LOOKUP_DEMOTE_WINDOW_MS="10"/);
    expect(problems).toMatch(/LOOKUP_DEMOTE_FAILURE_RATE="2"/);
    expect(problems).toMatch(/LOOKUP_DEMOTE_LATENCY_MS="slow"/);
    expect(() => validateEnvironment({ LOOKUP_DEMOTE_WINDOW_CALLS: '5', LOOKUP_DEMOTE_MIN_CALLS: '6' })).toThrow(
      /LOOKUP_DEMOTE_MIN_CALLS=6: must not exceed LOOKUP_DEMOTE_WINDOW_CALLS \(5\)/,
    );
  });

  it('applies the documented bulk defaults', () => {
    const config = new AppConfig(validateEnvironment({}), 'postgres://x');
    expect(config.bulk).toEqual({
      concurrency: 50,
      chunkSize: 100,
      parallelChunks: 4,
      chunkTimeoutSeconds: 120,
      chunkLeaseSeconds: 10,
      chunkRetries: 1000,
      maintenanceIntervalSeconds: 10,
      pollIntervalSeconds: 1,
      queueName: 'bulk-lookups',
      queueSchema: 'pgboss',
    });
    expect(config.callbacks).toEqual({ timeoutMs: 5000, retries: 8, retryDelaySeconds: 5, allowPrivateNetworks: false, allowedPorts: [80, 443], deprecatedNames: [] });
    expect(() => validateEnvironment({ BULK_POLL_INTERVAL_SECONDS: '0.1' })).toThrow(/BULK_POLL_INTERVAL_SECONDS/);
    expect(() => validateEnvironment({ BULK_QUEUE_SCHEMA: 'Bad-Schema' })).toThrow(/BULK_QUEUE_SCHEMA/);
  });

  it('reads CALLBACK_*, and the deprecated BULK_WEBHOOK_* names when the new one is unset, naming them', () => {
    const old = new AppConfig(validateEnvironment({ BULK_WEBHOOK_RETRIES: '2', BULK_CALLBACK_ALLOW_PRIVATE_NETWORKS: 'true' }), 'postgres://x');
    expect(old.callbacks).toEqual({
      timeoutMs: 5000,
      retries: 2,
      retryDelaySeconds: 5,
      allowPrivateNetworks: true,
      allowedPorts: [80, 443],
      deprecatedNames: ['BULK_WEBHOOK_RETRIES', 'BULK_CALLBACK_ALLOW_PRIVATE_NETWORKS'],
    });
    const both = new AppConfig(validateEnvironment({ CALLBACK_RETRIES: '3', BULK_WEBHOOK_RETRIES: '2' }), 'postgres://x');
    expect(both.callbacks.retries).toBe(3);
    expect(() => validateEnvironment({ CALLBACK_RETRIES: '31' })).toThrow(/CALLBACK_RETRIES/);
  });

  it('reads CALLBACK_ALLOWED_PORTS as a list of ports or any, and refuses anything else', () => {
    const ports = (value: string) => new AppConfig(validateEnvironment({ CALLBACK_ALLOWED_PORTS: value }), 'postgres://x').callbacks.allowedPorts;
    expect(ports('443,8443')).toEqual([443, 8443]);
    expect(ports('65535')).toEqual([65535]);
    expect(ports('any')).toBe('any');
    for (const bad of ['0', '65536', '80, 443', '80;443', '*', 'http']) {
      expect(() => validateEnvironment({ CALLBACK_ALLOWED_PORTS: bad })).toThrow(/CALLBACK_ALLOWED_PORTS must be a comma-separated list of ports/);
    }
  });

  it('converts numeric strings and treats empty values as unset', () => {
    const env = validateEnvironment({ PORT: '8080', PRICE_LINE_TYPE: '3', REDIS_URL: '', DATABASE_URL: '' });
    expect(env.PORT).toBe(8080);
    expect(env.PRICE_LINE_TYPE).toBe(3);
    expect(env.REDIS_URL).toBeUndefined();
    expect(env.DATABASE_URL).toBeUndefined();
  });

  it('names every bad variable in one error', () => {
    expect(() => validateEnvironment({ PORT: 'abc', PROVIDER: 'pigeon', DATABASE_URL: 'mysql://x', PRICE_PORTABILITY: '-1' })).toThrow(ConfigurationError);
    try {
      validateEnvironment({ PORT: 'abc', PROVIDER: 'pigeon', DATABASE_URL: 'mysql://x', PRICE_PORTABILITY: '-1' });
    } catch (error) {
      const message = (error as Error).message;
      for (const name of ['PORT', 'PROVIDER', 'DATABASE_URL', 'PRICE_PORTABILITY']) expect(message).toContain(`${name}=`);
    }
  });

  it('says one thing a variable: PORT=abc is not an integer (not also above 65535 and below 0)', () => {
    expect(() => validateEnvironment({ PORT: 'abc' })).toThrow(new ConfigurationError('Invalid configuration:\n  - PORT="abc": PORT must be an integer number'));
    expect(() => validateEnvironment({ PORT: '70000' })).toThrow(new ConfigurationError('Invalid configuration:\n  - PORT="70000": PORT must not be greater than 65535'));
  });

  it('never prints a secret: an invalid key as <redacted>, a database or Redis URL without its password', () => {
    const raw = { DATA_HASH_KEY: 'short-secret-hash-key', DATABASE_URL: 'mysql://app:db-pass-123@db:5432/x', REDIS_URL: 'http://cache:redis-pass-456@r:6379' };
    let message = '';
    try {
      validateEnvironment(raw);
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message).toContain('DATA_HASH_KEY=<redacted>');
    expect(message).toContain('DATABASE_URL="mysql://app:<redacted>@db:5432/x"');
    expect(message).toContain('REDIS_URL=');
    for (const secret of ['short-secret-hash-key', 'db-pass-123', 'redis-pass-456']) expect(message).not.toContain(secret);
  });

  it('needs the key and secret for the hlr-lookups provider, named at validation like every other mistake', () => {
    expect(() => validateEnvironment({ PROVIDER: 'hlr-lookups' })).toThrow(
      new ConfigurationError('Invalid configuration:\n  - HLR_LOOKUPS_KEY and HLR_LOOKUPS_SECRET: required for provider hlr-lookups (adapter hlr-lookups)'),
    );
  });
});

describe('operations settings', () => {
  it('defaults to no CORS, no trusted proxy and a 10 s shutdown bound', () => {
    const config = new AppConfig(validateEnvironment({}), 'postgres://x');
    expect(config.http).toMatchObject({ corsOrigins: undefined, trustProxy: false });
    expect(config.shutdownTimeoutMs).toBe(10000);
  });

  it('reads CORS_ORIGINS, TRUST_PROXY and SHUTDOWN_TIMEOUT_MS', () => {
    const env = validateEnvironment({ CORS_ORIGINS: 'https://a.example.com,https://b.example.com', TRUST_PROXY: '1', SHUTDOWN_TIMEOUT_MS: '2500' });
    const config = new AppConfig(env, 'postgres://x');
    expect(config.http).toMatchObject({ corsOrigins: ['https://a.example.com', 'https://b.example.com'], trustProxy: 1 });
    expect(config.shutdownTimeoutMs).toBe(2500);
  });

  it('names a malformed CORS_ORIGINS or TRUST_PROXY', () => {
    expect(() => validateEnvironment({ CORS_ORIGINS: 'example.com', TRUST_PROXY: 'sometimes' })).toThrow(/CORS_ORIGINS="example.com"[\s\S]*TRUST_PROXY="sometimes"/);
  });

  it('refuses a sweep bound shorter than the longest call', () => {
    expect(() => new AppConfig(validateEnvironment({ UNSETTLED_CHARGE_REFUND_AFTER_SECONDS: '10', PROVIDER_TIMEOUT_MS: '3000', PROVIDER_RETRIES: '1' }), 'postgres://x')).toThrow(
      /UNSETTLED_CHARGE_REFUND_AFTER_SECONDS=10 must be at least 11/,
    );
    expect(() => new AppConfig(validateEnvironment({ UNSETTLED_CHARGE_REFUND_AFTER_SECONDS: '11', PROVIDER_TIMEOUT_MS: '3000', PROVIDER_RETRIES: '1' }), 'postgres://x')).not.toThrow();
  });
});

/** Production refuses to start without one (docs/privacy.md). */
const PRODUCTION_KEY = 'k'.repeat(32);

describe('HTTP hardening settings (issue 24)', () => {
  it('defaults to a 4 KiB unauthenticated body, Node timeouts well below its own, a connection cap, and private ops endpoints in production only', () => {
    const config = new AppConfig(validateEnvironment({}), 'postgres://x@localhost/db');
    expect(config.http).toMatchObject({ unauthenticatedBodyLimitBytes: 4096, headersTimeoutMs: 10_000, requestTimeoutMs: 30_000, keepAliveTimeoutMs: 5_000, maxConnections: 2000 });
    expect(config.opsEndpoints.private).toBe(false);
    expect(new AppConfig(validateEnvironment({ NODE_ENV: 'production', DATA_HASH_KEY: PRODUCTION_KEY }), 'postgres://x@localhost/db').opsEndpoints.private).toBe(true);
    expect(new AppConfig(validateEnvironment({ NODE_ENV: 'production', DATA_HASH_KEY: PRODUCTION_KEY, OPS_ENDPOINTS: 'public' }), 'postgres://x@localhost/db').opsEndpoints.private).toBe(false);
    expect(() => validateEnvironment({ OPS_ENDPOINTS: 'open' })).toThrow(/OPS_ENDPOINTS/);
    expect(() => validateEnvironment({ METRICS_TOKEN: 'short' })).toThrow(/METRICS_TOKEN/);
  });
});

describe('ADMIN_TOKEN in production (issue 35 point 7)', () => {
  const production = { NODE_ENV: 'production', DATA_HASH_KEY: PRODUCTION_KEY };

  it('refuses the placeholder of the examples with one line that names the fix and never the token', () => {
    let error: unknown;
    try {
      validateEnvironment({ ...production, ADMIN_TOKEN: 'change-me-admin-token' });
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(ConfigurationError);
    const message = (error as Error).message;
    expect(message).toBe(
      'ADMIN_TOKEN is a placeholder from an example, which NODE_ENV=production refuses: set it to a random secret of at least 32 characters (e.g. `openssl rand -hex 24`), or unset it to turn the admin API off.',
    );
  });

  it('refuses a short or low-variety token in production, and accepts a random one', () => {
    expect(() => validateEnvironment({ ...production, ADMIN_TOKEN: 'k3J9xQ2mP7vL0wR5' })).toThrow(/^ADMIN_TOKEN has 16 characters, too short for NODE_ENV=production/);
    expect(() => validateEnvironment({ ...production, ADMIN_TOKEN: 'ab'.repeat(20) })).toThrow(/^ADMIN_TOKEN has only 2 different characters/);
    expect(validateEnvironment({ ...production, ADMIN_TOKEN: 'c0d1e3f47a9b82d6e5f1a0b3c4d7e8f9a1b2c3d4e5f60718' }).ADMIN_TOKEN).toHaveLength(48);
    expect(validateEnvironment(production).ADMIN_TOKEN).toBeUndefined(); // unset: the admin API off
  });

  it('outside production the 16-character minimum is the only rule (a laptop demo may say change-me)', () => {
    expect(validateEnvironment({ ADMIN_TOKEN: 'change-me-admin-token' }).ADMIN_TOKEN).toBe('change-me-admin-token');
    expect(validateEnvironment({ NODE_ENV: 'test', ADMIN_TOKEN: 'k3J9xQ2mP7vL0wR5' }).ADMIN_TOKEN).toBe('k3J9xQ2mP7vL0wR5');
  });
});
