import { AppConfig } from './app-config';
import { ConfigurationError, validateEnvironment } from './environment';

describe('validateEnvironment', () => {
  it('applies the documented defaults', () => {
    const env = validateEnvironment({});
    const config = new AppConfig(env, 'postgres://x');
    expect(config.port).toBe(3000);
    expect(config.provider.kind).toBe('sandbox');
    expect(config.prices).toEqual({ network_status: 4, line_type: 1, portability: 2 });
    expect(config.cache.ttlSeconds).toEqual({ network_status: 3600, portability: 86400, line_type: 2_592_000 });
    expect(config.provider.timeoutMs).toBe(3000);
    // The base of the documentation's examples and of the official SDKs (docs/upstream-hlr-lookups.md).
    expect(config.provider.hlrLookups.baseUrl).toBe('https://www.hlr-lookups.com/api/v2');
    expect(config.adminToken).toBeUndefined();
    expect(config.redisUrl).toBeUndefined();
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
      webhook: { timeoutMs: 5000, retries: 8, retryDelaySeconds: 5, allowPrivateNetworks: false },
    });
    expect(() => validateEnvironment({ BULK_POLL_INTERVAL_SECONDS: '0.1' })).toThrow(/BULK_POLL_INTERVAL_SECONDS/);
    expect(() => validateEnvironment({ BULK_QUEUE_SCHEMA: 'Bad-Schema' })).toThrow(/BULK_QUEUE_SCHEMA/);
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

  it('needs the key and secret for the hlr-lookups provider', () => {
    expect(() => new AppConfig(validateEnvironment({ PROVIDER: 'hlr-lookups' }), 'postgres://x')).toThrow(/HLR_LOOKUPS_KEY/);
  });
});

describe('operations settings', () => {
  it('defaults to no CORS, no trusted proxy and a 10 s shutdown bound', () => {
    const config = new AppConfig(validateEnvironment({}), 'postgres://x');
    expect(config.http).toEqual({ corsOrigins: undefined, trustProxy: false });
    expect(config.shutdownTimeoutMs).toBe(10000);
  });

  it('reads CORS_ORIGINS, TRUST_PROXY and SHUTDOWN_TIMEOUT_MS', () => {
    const env = validateEnvironment({ CORS_ORIGINS: 'https://a.example.com,https://b.example.com', TRUST_PROXY: '1', SHUTDOWN_TIMEOUT_MS: '2500' });
    const config = new AppConfig(env, 'postgres://x');
    expect(config.http).toEqual({ corsOrigins: ['https://a.example.com', 'https://b.example.com'], trustProxy: 1 });
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
