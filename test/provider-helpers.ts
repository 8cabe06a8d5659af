import 'reflect-metadata';
import { LoggerService, LogLevel } from '@nestjs/common';
import { Test, TestingModule } from '@nestjs/testing';
import { Clock } from '../src/common/clock';
import { ClockModule } from '../src/common/clock.module';
import { AppConfig, BreakerOptions } from '../src/config/app-config';
import { AppConfigModule } from '../src/config/config.module';
import { validateEnvironment } from '../src/config/environment';
import { Metrics } from '../src/metrics/metrics';
import { MetricsModule } from '../src/metrics/metrics.module';
import { HlrLookupsAdapter } from '../src/provider/adapters/hlr-lookups.adapter';
import { LookupCacheStore } from '../src/provider/cache/lookup-cache.store';
import { LookupCacheEraser } from '../src/provider/lookup-cache-eraser';
import { Lane, LookupProvider } from '../src/provider/port/lookup-provider';
import type { FieldValue } from '../src/checks/check-definition';
import { LookupOptions, LookupService } from '../src/provider/lookup.service';
import { CheckRegistry, NumberReport } from '../src/checks/check-registry';
import type { EnabledChecks } from '../src/checks/checks';
import { ChecksModule } from '../src/checks/checks.module';
import type { PhoneAnswerDto } from '../src/checks/phone-answer.dto';
import type { SandboxAdapter } from '../src/provider/adapters/sandbox.adapter';
import { ProviderHealth } from '../src/provider/provider-health';
import { ProviderModule } from '../src/provider/provider.module';
import { ResilientUpstream } from '../src/provider/resilience/resilient-upstream';
import type { ManualClock } from './helpers/manual-clock';

/** The built-in checks' answers in the adapters' protocol-level shapes: what these tests compare. */
export interface ProtocolAnswers {
  networkStatus?: { status: unknown; carrier: unknown };
  numberType?: { lineType: unknown };
  portability?: { isPorted: unknown; carrier: unknown };
}

/** The fields of each built-in check these tests compare (a record also carries status_reason, mcc, mnc). */
const COMPARED_FIELDS: Readonly<Record<string, readonly string[]>> = {
  network_status: ['status', 'carrier'],
  line_type: ['line_type'],
  portability: ['is_ported', 'carrier'],
};

/** One check asked by name through the port (LookupProvider.answer), reduced to the fields these tests compare. */
export async function checkFields(provider: LookupProvider, check: string, e164: string, lane?: Lane): Promise<Record<string, FieldValue>> {
  const { fields } = await provider.answer(check, e164, lane);
  return Object.fromEntries((COMPARED_FIELDS[check] ?? Object.keys(fields)).map((name) => [name, fields[name]]));
}

export interface ProviderTestModule {
  module: TestingModule;
  config: AppConfig;
  lookups: LookupService;
  registry: CheckRegistry;
  /** LookupService.lookUp, its full records reduced to the protocol-level shapes. */
  lookupAnswers(e164: string, checks: EnabledChecks, options?: LookupOptions): Promise<ProtocolAnswers>;
  /** LookupService.lookUp projected to /filter's six fields. */
  phoneAnswer(e164: string, checks: EnabledChecks, options?: LookupOptions): Promise<PhoneAnswerDto>;
  provider: LookupProvider;
  /** The configured adapter (one upstream: the provider itself). */
  adapter: SandboxAdapter | HlrLookupsAdapter;
  store: LookupCacheStore;
  /** The lookup cache's part of an erasure. */
  eraser: LookupCacheEraser;
  health: ProviderHealth;
  /** The text /metrics would show for the provider's instruments (with `metrics: true`). */
  scrape(name: string): Promise<string>;
  close(): Promise<void>;
}

/**
 * The real ProviderModule alone, configured like production plus `env` overrides (no HTTP API, no
 * database needed). REDIS_URL is ignored from the outer environment unless the overrides set it.
 * With `clock`, every rule about time in it (breakers, demotion, 429 holds, cache expiry, freshness)
 * runs on that ManualClock; otherwise on the machine's.
 */
export async function startProviderModule(
  env: Record<string, string | undefined> = {},
  logger: LoggerService | LogLevel[] = ['error'],
  options: { clock?: ManualClock; metrics?: boolean } = {},
): Promise<ProviderTestModule> {
  const raw: Record<string, string | undefined> = { ...process.env, REDIS_URL: undefined, LOG_LEVEL: 'error', ...env };
  const config = new AppConfig(validateEnvironment(raw), raw.DATABASE_URL ?? 'postgres://unused@127.0.0.1/unused');
  const imports = [AppConfigModule.forRoot(config), ClockModule, ChecksModule.forRoot(config.checkTuning), ProviderModule, ...(options.metrics ? [MetricsModule] : [])];
  let builder = Test.createTestingModule({ imports });
  if (options.clock) builder = builder.overrideProvider(Clock).useValue(options.clock);
  const module = await builder.compile();
  module.useLogger(logger);
  await module.init();
  return {
    module,
    config,
    lookups: module.get(LookupService),
    registry: module.get(CheckRegistry),
    lookupAnswers: async (e164, checks, options) => protocolAnswers(await module.get(LookupService).lookUp(e164, checks, options)),
    phoneAnswer: async (e164, checks, options) => module.get(CheckRegistry).toPhoneAnswer(await module.get(LookupService).lookUp(e164, checks, options)),
    provider: module.get(LookupProvider),
    adapter: module.get(LookupProvider) as SandboxAdapter | HlrLookupsAdapter,
    store: module.get(LookupCacheStore),
    eraser: module.get(LookupCacheEraser),
    health: module.get(ProviderHealth),
    scrape: (name) => module.get(Metrics).registry.getSingleMetricAsString(name),
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

/** A report's built-in records in the shapes the adapters' protocol methods answer. */
export function protocolAnswers(report: NumberReport): ProtocolAnswers {
  const { network_status: network, line_type: type, portability } = report.answers;
  return {
    ...(network ? { networkStatus: { status: network.fields.status, carrier: network.fields.carrier } } : {}),
    ...(type ? { numberType: { lineType: type.fields.line_type } } : {}),
    ...(portability ? { portability: { isPorted: portability.fields.is_ported, carrier: portability.fields.carrier } } : {}),
  };
}

/**
 * An hlr-lookups adapter on its own (no Nest module), given the resilience every upstream gets, as the
 * provider module builds it: `batchSockets` connections for the batch lane (256 for live calls).
 */
export function hlrLookupsAdapter(options: {
  baseUrl: string;
  key: string;
  secret: string;
  timeoutMs: number;
  retries: number;
  breaker: BreakerOptions;
  batchSockets?: number;
  maxResponseBytes?: number;
}): HlrLookupsAdapter {
  const { baseUrl, key, secret, batchSockets = 30, maxResponseBytes = 1024 * 1024, ...policies } = options;
  return new HlrLookupsAdapter(
    { baseUrl, key, secret },
    new ResilientUpstream('hlr-lookups', baseUrl, { ...policies, maxResponseBytes, sockets: { interactive: 256, batch: batchSockets } }),
  );
}

/**
 * Environment for two upstreams behind LOOKUP_PROVIDERS=primary,backup: hlr-lookups at `primaryUrl`
 * (its simulator), Twilio Lookup at `backupUrl` (its simulator), short timeouts, no retries.
 */
export function twoUpstreamsEnv(primaryUrl: string, backupUrl: string, extra: Record<string, string | undefined> = {}): Record<string, string | undefined> {
  return {
    LOOKUP_PROVIDERS: 'primary,backup',
    PRIMARY_ADAPTER: 'hlr-lookups',
    PRIMARY_URL: primaryUrl,
    PRIMARY_KEY: 'sim-key',
    PRIMARY_SECRET: 'sim-secret',
    BACKUP_ADAPTER: 'twilio-lookup',
    BACKUP_URL: backupUrl,
    BACKUP_KEY: 'ACsimulator',
    BACKUP_SECRET: 'sim-token',
    PROVIDER_TIMEOUT_MS: '500',
    PROVIDER_RETRIES: '0',
    ...extra,
  };
}

/** The checks both simulated upstreams answer (Twilio offers no portability). */
export const CHECKS_BOTH_UPSTREAMS_OFFER = { checks: { network_status: true, line_type: true, portability: false } };
