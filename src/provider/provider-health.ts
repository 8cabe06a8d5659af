import { Injectable } from '@nestjs/common';
import { AppConfig } from '../config/app-config';
import { LookupCacheStore } from './lookup-cache.store';
import { LookupProvider } from './lookup-provider';
import { withTimeout } from '../common/timeout';

export interface ProviderHealthStatus {
  provider: string;
  /** True for the sandbox: answers are not from a real network. */
  simulated: boolean;
  reachable: boolean;
  /** Why it is not reachable, when it is not. */
  detail?: string;
}

export interface LookupCacheHealthStatus {
  store: 'memory' | 'redis';
  reachable: boolean;
}

/** What /health/ready reports about the lookup provider and the lookup cache. Never throws. */
@Injectable()
export class ProviderHealth {
  constructor(
    private readonly provider: LookupProvider,
    private readonly store: LookupCacheStore,
    private readonly config: AppConfig,
  ) {}

  async check(): Promise<ProviderHealthStatus> {
    const base = { provider: this.provider.name, simulated: this.provider.simulated };
    try {
      await withTimeout(this.provider.ping(), this.config.provider.timeoutMs);
      return { ...base, reachable: true };
    } catch (error) {
      return { ...base, reachable: false, detail: error instanceof Error ? error.message : String(error) };
    }
  }

  async cache(): Promise<LookupCacheHealthStatus> {
    return { store: this.store.kind, reachable: await withTimeout(this.store.ping(), 1000).catch(() => false) };
  }
}
