import { Logger, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import Redis, { type ChainableCommander } from 'ioredis';
import type { RedisBudget } from '../../common/redis-budget';
import { CounterBatch, CounterStore, CountersUnavailable, Later } from './counter-store';

/**
 * The counters in Redis, shared by every instance (two instances see one attack as one). A batch is
 * one pipeline: one round trip a call, written when `exec` is called, within the request's Redis
 * allowance (REDIS_CALL_BUDGET_MS) when there is one. Keys under RISK_REDIS_PREFIX.
 */
export class RedisCounterStore extends CounterStore implements OnModuleInit, OnModuleDestroy {
  readonly kind = 'redis';
  readonly client: Redis;
  private readonly logger = new Logger('RiskCounters');

  constructor(
    url: string,
    keyPrefix: string,
    private readonly budget?: RedisBudget,
  ) {
    super();
    this.client = new Redis(url, {
      keyPrefix,
      lazyConnect: true,
      // Fail fast while disconnected: the call is answered 503 (and refunded) instead of waiting.
      enableOfflineQueue: false,
      maxRetriesPerRequest: 1,
      commandTimeout: 500,
      connectTimeout: 1000,
      enableAutoPipelining: false,
    });
    this.client.on('error', () => undefined);
    budget?.watch(this.client);
  }

  async onModuleInit(): Promise<void> {
    try {
      await this.client.connect();
    } catch (error) {
      this.logger.warn(`Redis unreachable at start-up: risk verdicts answer 503 until it is back: ${(error as Error).message}`);
    }
  }

  async onModuleDestroy(): Promise<void> {
    if (this.client.status !== 'ready') return this.client.disconnect();
    try {
      await this.client.quit();
    } catch {
      this.client.disconnect();
    }
  }

  batch(): CounterBatch {
    return new RedisBatch(this.client, this.budget);
  }
}

class RedisBatch implements CounterBatch {
  private readonly pipeline: ChainableCommander;
  /** For each command, what to do with its reply (commands whose reply is not read: none). */
  private readonly readers: Array<((reply: unknown) => void) | undefined> = [];

  constructor(
    private readonly client: Redis,
    private readonly budget?: RedisBudget,
  ) {
    this.pipeline = client.pipeline();
  }

  private queue(add: (pipeline: ChainableCommander) => void, read?: (reply: unknown) => void): void {
    add(this.pipeline);
    this.readers.push(read);
  }

  remember(key: string, member: string, score: number, ttlMs: number): void {
    this.queue((p) => p.zadd(key, score, member));
    this.queue((p) => p.zremrangebyscore(key, '-inf', `(${score - ttlMs}`));
    this.queue((p) => p.pexpire(key, ttlMs));
  }

  count(key: string, after: number, upTo: number): Later<number> {
    const later: Later<number> = { value: 0 };
    this.queue((p) => p.zcount(key, `(${bound(after)}`, bound(upTo)), (reply) => (later.value = Number(reply)));
    return later;
  }

  forgetMember(key: string, member: string): void {
    this.queue((p) => p.zrem(key, member));
  }

  setFields(key: string, fields: Record<string, string>, ttlMs: number): void {
    this.queue((p) => p.hset(key, fields));
    this.queue((p) => p.pexpire(key, ttlMs));
  }

  fields(key: string): Later<Record<string, string>> {
    const later: Later<Record<string, string>> = { value: {} };
    this.queue((p) => p.hgetall(key), (reply) => (later.value = (reply as Record<string, string>) ?? {}));
    return later;
  }

  increment(key: string, field: string, by: number, ttlMs: number): void {
    this.queue((p) => p.hincrby(key, field, by));
    this.queue((p) => p.pexpire(key, ttlMs));
  }

  addMember(key: string, member: string, ttlMs: number): void {
    this.queue((p) => p.sadd(key, member));
    this.queue((p) => p.pexpire(key, ttlMs));
  }

  members(key: string): Later<string[]> {
    const later: Later<string[]> = { value: [] };
    this.queue((p) => p.smembers(key), (reply) => (later.value = (reply as string[]) ?? []));
    return later;
  }

  remove(key: string): void {
    this.queue((p) => p.del(key));
  }

  async exec(): Promise<void> {
    if (this.readers.length === 0) return;
    if (this.client.status !== 'ready') throw new CountersUnavailable(`Redis is not connected (${this.client.status})`);
    const send = () =>
      this.pipeline.exec().catch((error: Error) => {
        throw new CountersUnavailable(error.message);
      });
    const replies = this.budget
      ? await this.budget.spend(send, () => {
          throw new CountersUnavailable("the request's Redis allowance is spent (REDIS_CALL_BUDGET_MS)");
        })
      : await send();
    if (!replies) throw new CountersUnavailable('the pipeline was not run');
    replies.forEach(([error, reply], index) => {
      if (error) throw new CountersUnavailable(error.message);
      this.readers[index]?.(reply);
    });
  }
}

/** A score bound as Redis writes it (`+inf`, `-inf`). */
function bound(score: number): string {
  if (score === Infinity) return '+inf';
  if (score === -Infinity) return '-inf';
  return String(score);
}
