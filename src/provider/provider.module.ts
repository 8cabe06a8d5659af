import { Module } from '@nestjs/common';
import { Clock } from '../common/clock';
import { AppConfig } from '../config/app-config';
import { BUILT_IN_CHECKS } from '../checks/built-in-checks';
import { HlrLookupsAdapter } from './adapters/hlr-lookups.adapter';
import { TwilioLookupAdapter } from './adapters/twilio-lookup.adapter';
import { CamaraSimSwapAdapter } from './adapters/camara-sim-swap.adapter';
import type { ProviderEntry } from '../config/lookup-providers';
import type { UpstreamAdapterName } from '../config/upstream-adapters';
import { FailoverProvider } from './routing/failover-provider';
import { SandboxAdapter } from './adapters/sandbox.adapter';
import { LookupProvider } from './port/lookup-provider';
import { LookupService } from './lookup.service';
import { LookupCacheModule } from './lookup-cache.module';
import { ProviderHealth } from './provider-health';
import { ProviderMetrics } from './metrics/provider-metrics';
import { ResilienceOptions, ResilientUpstream } from './resilience/resilient-upstream';

/**
 * The upstreams of the configuration (LOOKUP_PROVIDERS, or its shorthand PROVIDER), each adapter given the
 * resilience every upstream gets; several are asked in priority order behind a FailoverProvider.
 */
export function createLookupProvider(config: AppConfig, clock: Clock): LookupProvider {
  const adapters = config.provider.upstreams.map((entry) => createAdapter(entry, config, clock));
  const { routing } = config.provider;
  const routed = [routing.checks, routing.countries, routing.residency].some((part) => Object.keys(part).length > 0);
  if (adapters.length === 1 && !routed) return adapters[0];
  return new FailoverProvider(
    adapters.map((provider) => ({ provider, upstream: provider.upstreams()[0] })),
    routing,
    config.provider.callBudgetMs,
    config.provider.demotion,
    clock,
  );
}

/** One factory per adapter of src/config/upstream-adapters.ts (the type makes a missing one a compile error). */
const ADAPTER_FACTORIES: Record<UpstreamAdapterName, (entry: ProviderEntry, config: AppConfig, clock: Clock) => LookupProvider> = {
  sandbox: ({ id }, config, clock) => new SandboxAdapter(config.provider.timeoutMs, id, clock),
  'hlr-lookups': ({ id, baseUrl, key, secret }, config, clock) =>
    new HlrLookupsAdapter({ baseUrl, key, secret }, new ResilientUpstream(id, baseUrl, resilienceOptions(config), clock)),
  'twilio-lookup': ({ id, baseUrl, key, secret }, config, clock) =>
    new TwilioLookupAdapter({ baseUrl, key, secret }, new ResilientUpstream(id, baseUrl, resilienceOptions(config), clock)),
  'camara-sim-swap': ({ id, baseUrl, key, secret, tokenUrl }, config, clock) =>
    new CamaraSimSwapAdapter(
      { key, secret },
      new ResilientUpstream(id, baseUrl, resilienceOptions(config), clock),
      new ResilientUpstream(id, tokenUrl, resilienceOptions(config), clock),
    ),
};

function createAdapter(entry: ProviderEntry, config: AppConfig, clock: Clock): LookupProvider {
  return ADAPTER_FACTORIES[entry.adapter](entry, config, clock);
}

/**
 * The policies and pools of one upstream, from the configuration. The batch lane's pool holds a
 * connection per built-in check for every bulk number and watchlist number looked up at once.
 */
export function resilienceOptions(config: AppConfig): ResilienceOptions {
  const { timeoutMs, retries, breaker, maxResponseBytes } = config.provider;
  const batchLookups = config.bulk.concurrency + config.watchlists.concurrency;
  return { timeoutMs, retries, breaker, maxResponseBytes, sockets: { interactive: 256, batch: batchLookups * BUILT_IN_CHECKS.length } };
}

/**
 * Lookups of the registered checks, cached and collapsed. A leaf module: imports no other feature.
 * Needs AppConfig (global, from AppConfigModule).
 */
@Module({
  imports: [LookupCacheModule],
  providers: [
    { provide: LookupProvider, inject: [AppConfig, Clock], useFactory: createLookupProvider },
    LookupService,
    ProviderHealth,
    ProviderMetrics,
  ],
  exports: [LookupService, LookupProvider, ProviderHealth],
})
export class ProviderModule {}
