import { Logger, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import Redis from 'ioredis';
import type { RedisBudget } from '../../common/redis-budget';
import { CounterBatch, CounterStore, CountersUnavailable, CounterWrites, Later } from './counter-store';

/**
 * The counters in Redis, shared by every instance (two instances see one attack as one). A batch is
 * one script call (BATCH_SCRIPT): one round trip and one command a call, written when `exec` is called, within the request's Redis
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
    // A batch is one script call: EVALSHA, falling back to EVAL once per connection; the prefix applies to KEYS.
    this.client.defineCommand('riskBatch', { lua: BATCH_SCRIPT });
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

/**
 * A batch's operations run by Redis in one script call (EVALSHA, EVAL once per connection): the same
 * commands a pipeline would send, in the same order, with one command for the client to build, send and
 * parse instead of some seventy a verdict (docs/sms-pumping.md "What it costs"). KEYS are the batch's
 * distinct keys (the client's prefix applies to them); ARGV is the operations, each an opcode, the index
 * of its key in KEYS and its arguments. The replies of the reading operations come back in order. `U`
 * (unless marked) skips the next operation when its key, an erasure's mark, is set; `K` sets a mark.
 */
export const BATCH_SCRIPT = `local function bound(b)
  if b == '+inf' then return math.huge elseif b == '-inf' then return -math.huge end
  return tonumber(b)
end
local function within(score, after, upTo)
  return score > bound(after) and score <= bound(upTo)
end
local replies, i, marked, skip = {}, 1, {}, false
while i <= #ARGV do
  local op, key = ARGV[i], KEYS[tonumber(ARGV[i + 1])]
  local skipped = skip
  skip = false
  if op == 'U' then
    if marked[key] == nil then marked[key] = redis.call('EXISTS', key) == 1 end
    skip = marked[key]
    i = i + 2
  elseif op == 'K' then
    redis.call('SET', key, '1', 'PX', ARGV[i + 2])
    marked[key] = true
    i = i + 3
  elseif skipped then
    if op == 'R' then i = i + 6
    elseif op == 'H' then i = i + 4 + 2 * tonumber(ARGV[i + 2])
    elseif op == 'A' then i = i + 4
    else return redis.error_reply('counter operation ' .. tostring(op) .. ' cannot be skipped') end
  elseif op == 'R' then
    redis.call('ZADD', key, ARGV[i + 3], ARGV[i + 2])
    redis.call('ZREMRANGEBYSCORE', key, '-inf', ARGV[i + 4])
    redis.call('PEXPIRE', key, ARGV[i + 5])
    i = i + 6
  elseif op == 'C' then
    replies[#replies + 1] = redis.call('ZCOUNT', key, ARGV[i + 2], ARGV[i + 3])
    i = i + 4
  elseif op == 'W' then
    local n = redis.call('ZCOUNT', key, '(' .. ARGV[i + 4], ARGV[i + 5])
    local now = redis.call('ZSCORE', key, ARGV[i + 2])
    if now and within(tonumber(now), ARGV[i + 4], ARGV[i + 5]) then n = n - 1 end
    if within(tonumber(ARGV[i + 3]), ARGV[i + 4], ARGV[i + 5]) then n = n + 1 end
    replies[#replies + 1] = n
    i = i + 6
  elseif op == 'M' then
    redis.call('ZREM', key, ARGV[i + 2])
    i = i + 3
  elseif op == 'H' then
    local n = tonumber(ARGV[i + 2])
    redis.call('HSET', key, unpack(ARGV, i + 3, i + 2 + 2 * n))
    redis.call('PEXPIRE', key, ARGV[i + 3 + 2 * n])
    i = i + 4 + 2 * n
  elseif op == 'G' then
    replies[#replies + 1] = redis.call('HGETALL', key)
    i = i + 2
  elseif op == 'I' then
    redis.call('HINCRBY', key, ARGV[i + 2], ARGV[i + 3])
    redis.call('PEXPIRE', key, ARGV[i + 4])
    i = i + 5
  elseif op == 'A' then
    redis.call('SADD', key, ARGV[i + 2])
    redis.call('PEXPIRE', key, ARGV[i + 3])
    i = i + 4
  elseif op == 'S' then
    replies[#replies + 1] = redis.call('SMEMBERS', key)
    i = i + 2
  elseif op == 'D' then
    redis.call('DEL', key)
    i = i + 2
  else
    return redis.error_reply('unknown counter operation ' .. tostring(op))
  end
end
return replies`;

type BatchScript = (numberOfKeys: number, ...keysAndArgs: string[]) => Promise<unknown[]>;

class RedisBatch implements CounterBatch {
  private readonly keys: string[] = [];
  private readonly keyIndex = new Map<string, string>();
  private readonly args: string[] = [];
  /** For each reading operation, in order, what to do with its reply. */
  private readonly readers: Array<(reply: unknown) => void> = [];

  constructor(
    private readonly client: Redis,
    private readonly budget?: RedisBudget,
  ) {}

  /** The key's index in KEYS (1-based, as Lua counts), added on first use. */
  private key(key: string): string {
    let index = this.keyIndex.get(key);
    if (index === undefined) {
      this.keys.push(key);
      index = String(this.keys.length);
      this.keyIndex.set(key, index);
    }
    return index;
  }

  remember(key: string, member: string, score: number, ttlMs: number): void {
    this.args.push('R', this.key(key), member, String(score), `(${score - ttlMs}`, String(ttlMs));
  }

  count(key: string, after: number, upTo: number): Later<number> {
    const later: Later<number> = { value: 0 };
    this.args.push('C', this.key(key), `(${bound(after)}`, bound(upTo));
    this.readers.push((reply) => (later.value = Number(reply)));
    return later;
  }

  countAsIf(key: string, member: string, score: number, after: number, upTo: number): Later<number> {
    const later: Later<number> = { value: 0 };
    this.args.push('W', this.key(key), member, String(score), bound(after), bound(upTo));
    this.readers.push((reply) => (later.value = Number(reply)));
    return later;
  }

  forgetMember(key: string, member: string): void {
    this.args.push('M', this.key(key), member);
  }

  setFields(key: string, fields: Record<string, string>, ttlMs: number): void {
    const entries = Object.entries(fields);
    this.args.push('H', this.key(key), String(entries.length));
    for (const [field, value] of entries) this.args.push(field, value);
    this.args.push(String(ttlMs));
  }

  fields(key: string): Later<Record<string, string>> {
    const later: Later<Record<string, string>> = { value: {} };
    this.args.push('G', this.key(key));
    this.readers.push((reply) => (later.value = fieldsOf(reply as string[])));
    return later;
  }

  increment(key: string, field: string, by: number, ttlMs: number): void {
    this.args.push('I', this.key(key), field, String(by), String(ttlMs));
  }

  addMember(key: string, member: string, ttlMs: number): void {
    this.args.push('A', this.key(key), member, String(ttlMs));
  }

  members(key: string): Later<string[]> {
    const later: Later<string[]> = { value: [] };
    this.args.push('S', this.key(key));
    this.readers.push((reply) => (later.value = (reply as string[]) ?? []));
    return later;
  }

  remove(key: string): void {
    this.args.push('D', this.key(key));
  }

  mark(key: string, ttlMs: number): void {
    this.args.push('K', this.key(key), String(ttlMs));
  }

  unlessMarked(key: string): CounterWrites {
    const guard = () => this.args.push('U', this.key(key));
    return {
      remember: (...args) => (guard(), this.remember(...args)),
      setFields: (...args) => (guard(), this.setFields(...args)),
      addMember: (...args) => (guard(), this.addMember(...args)),
    };
  }

  async exec(): Promise<void> {
    if (this.args.length === 0) return;
    if (this.client.status !== 'ready') throw new CountersUnavailable(`Redis is not connected (${this.client.status})`);
    const script = (this.client as unknown as { riskBatch: BatchScript }).riskBatch.bind(this.client);
    const send = () =>
      script(this.keys.length, ...this.keys, ...this.args).catch((error: Error) => {
        throw new CountersUnavailable(error.message);
      });
    const replies = this.budget
      ? await this.budget.spend(send, () => {
          throw new CountersUnavailable("the request's Redis allowance is spent (REDIS_CALL_BUDGET_MS)");
        })
      : await send();
    if (!Array.isArray(replies) || replies.length !== this.readers.length) throw new CountersUnavailable('the counters script answered an unexpected reply');
    replies.forEach((reply, index) => this.readers[index](reply));
  }
}

/** HGETALL's reply as Lua hands it back: field, value, field, value… */
function fieldsOf(flat: string[] | null): Record<string, string> {
  const fields: Record<string, string> = {};
  if (!flat) return fields;
  for (let i = 0; i + 1 < flat.length; i += 2) fields[flat[i]] = flat[i + 1];
  return fields;
}

/** A score bound as Redis writes it (`+inf`, `-inf`). */
function bound(score: number): string {
  if (score === Infinity) return '+inf';
  if (score === -Infinity) return '-inf';
  return String(score);
}
