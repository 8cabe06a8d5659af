import 'reflect-metadata';
import { LoggerService, LogLevel } from '@nestjs/common';
import { Test, TestingModule } from '@nestjs/testing';
import { AppConfig } from '../src/config/app-config';
import { AppConfigModule } from '../src/config/config.module';
import { validateEnvironment } from '../src/config/environment';
import { LookupCacheStore } from '../src/provider/lookup-cache.store';
import { LookupProvider } from '../src/provider/lookup-provider';
import { LookupService } from '../src/provider/lookup.service';
import { ProviderHealth } from '../src/provider/provider-health';
import { ProviderModule } from '../src/provider/provider.module';

export interface ProviderTestModule {
  module: TestingModule;
  config: AppConfig;
  lookups: LookupService;
  provider: LookupProvider;
  store: LookupCacheStore;
  health: ProviderHealth;
  close(): Promise<void>;
}

/**
 * The real ProviderModule alone, configured like production plus `env` overrides (no HTTP API, no
 * database needed). REDIS_URL is ignored from the outer environment unless the overrides set it.
 */
export async function startProviderModule(
  env: Record<string, string | undefined> = {},
  logger: LoggerService | LogLevel[] = ['error'],
): Promise<ProviderTestModule> {
  const raw: Record<string, string | undefined> = { ...process.env, REDIS_URL: undefined, LOG_LEVEL: 'error', ...env };
  const config = new AppConfig(validateEnvironment(raw), raw.DATABASE_URL ?? 'postgres://unused@127.0.0.1/unused');
  const module = await Test.createTestingModule({ imports: [AppConfigModule.forRoot(config), ProviderModule] }).compile();
  module.useLogger(logger);
  await module.init();
  return {
    module,
    config,
    lookups: module.get(LookupService),
    provider: module.get(LookupProvider),
    store: module.get(LookupCacheStore),
    health: module.get(ProviderHealth),
    close: () => module.close(),
  };
}

/** Environment for the hlr-lookups adapter against a simulator at `url` (short timeout for the slow number). */
export function hlrLookupsEnv(url: string, extra: Record<string, string> = {}): Record<string, string> {
  return {
    PROVIDER: 'hlr-lookups',
    HLR_LOOKUPS_URL: url,
    HLR_LOOKUPS_KEY: 'sim-key',
    HLR_LOOKUPS_SECRET: 'sim-secret',
    PROVIDER_TIMEOUT_MS: '300',
    PROVIDER_RETRIES: '1',
    PROVIDER_BREAKER_MIN_CALLS: '1000',
    PROVIDER_BREAKER_HALF_OPEN_MS: '200',
    ...extra,
  };
}
