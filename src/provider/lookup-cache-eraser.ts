import { Injectable } from '@nestjs/common';
import { HashKey, keyedHash } from '../common/keyed-hash';
import { AppConfig } from '../config/app-config';
import { CheckRegistry } from '../checks/check-registry';
import { LookupCacheStore } from './cache/lookup-cache.store';
import { ERASURE_MARK_SECONDS, PLAIN_CACHE_KEY_VERSION, PREVIOUS_KEYED_CACHE_KEY_VERSION, cacheKey, erasedKey } from './cache/cache-keys';

/**
 * The lookup cache's part of an erasure, apart from LookupService so that what erases (the admin CLI)
 * loads no upstream adapter.
 */
@Injectable()
export class LookupCacheEraser {
  private readonly hashKey: HashKey;

  constructor(
    private readonly store: LookupCacheStore,
    private readonly registry: CheckRegistry,
    config: AppConfig,
  ) {
    this.hashKey = config.dataHashKey;
  }

  /**
   * Erasure (docs/privacy.md): every cached record of the number, for every registered check, in every
   * tier and on every instance, including entries earlier versions wrote. The entries that were held.
   * The erasure's mark comes first: a lookup of the number still running (begun before the erasure)
   * can no longer cache its answer once the mark is held, and what it cached before is deleted here.
   */
  async forget(e164: string): Promise<number> {
    const checks = this.registry.names();
    const hash = keyedHash(this.hashKey, e164);
    await this.store.mark(erasedKey(hash), ERASURE_MARK_SECONDS);
    const hashed = await this.store.delete(
      checks.flatMap((check) => [cacheKey(check, hash), `${PREVIOUS_KEYED_CACHE_KEY_VERSION}:${check}:${hash}`]),
    );
    // Only Redis can hold these (no instance of this version keeps them in process): never broadcast a number.
    const plain = await this.store.delete(
      checks.map((check) => `${PLAIN_CACHE_KEY_VERSION}:${check}:${e164}`),
      false,
    );
    return hashed + plain;
  }
}
