import { QueryFailedError, QueryRunnerAlreadyReleasedError, QueryRunnerProviderAlreadyReleasedError, TransactionNotStartedError } from 'typeorm';
import { isDatabaseUnavailable } from './all-exceptions.filter';

/**
 * What the one exception filter answers 503 SERVICE_UNAVAILABLE ("the database is unreachable, nothing
 * was charged, retry") rather than 500: the errors a request meets when PostgreSQL dies under it.
 */
describe('isDatabaseUnavailable', () => {
  it('is true of a transaction whose connection the pool already dropped (kill -9 of PostgreSQL mid-transaction answered 500 before)', () => {
    expect(isDatabaseUnavailable(new QueryRunnerProviderAlreadyReleasedError())).toBe(true);
    expect(isDatabaseUnavailable(new QueryRunnerAlreadyReleasedError())).toBe(true);
    expect(isDatabaseUnavailable(new TransactionNotStartedError())).toBe(true);
  });

  it('is true of the driver\'s lost connections and of SQLSTATE class 08 and 57P0x', () => {
    expect(isDatabaseUnavailable(new Error('Connection terminated unexpectedly'))).toBe(true);
    expect(isDatabaseUnavailable(Object.assign(new Error('terminating connection due to unexpected postmaster exit'), { code: '57P01' }))).toBe(true);
    expect(isDatabaseUnavailable(new QueryFailedError('SELECT 1', [], Object.assign(new Error('x'), { code: '08006' })))).toBe(true);
  });

  it("is true of pg's other words for a connection it cannot use, and of a lost connection given as an error's cause", () => {
    expect(isDatabaseUnavailable(new Error('Client was closed and is not queryable'))).toBe(true);
    expect(isDatabaseUnavailable(new Error('Query read timeout'))).toBe(true);
    expect(isDatabaseUnavailable(new QueryFailedError('SELECT 1', [], new Error('Client has encountered a connection error and is not queryable')))).toBe(true);
    expect(isDatabaseUnavailable(new Error('the pool gave up', { cause: new Error('timeout expired') }))).toBe(true);
    expect(isDatabaseUnavailable(new Error('the claim failed', { cause: Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' }) }))).toBe(true);
  });

  it('is true of a transaction PostgreSQL rolled back to break a deadlock or a serialization conflict (a fault run answered 500 for "deadlock detected")', () => {
    expect(isDatabaseUnavailable(new QueryFailedError('UPDATE accounts', [], Object.assign(new Error('deadlock detected'), { code: '40P01' })))).toBe(true);
    expect(isDatabaseUnavailable(Object.assign(new Error('could not serialize access due to concurrent update'), { code: '40001' }))).toBe(true);
    // Other class-40 states (an integrity failure at commit) are not a conflict to retry.
    expect(isDatabaseUnavailable(Object.assign(new Error('transaction integrity constraint violation'), { code: '40002' }))).toBe(false);
  });

  it('is false of a statement PostgreSQL refused (a bug, or a constraint): those stay 500 or their own code', () => {
    expect(isDatabaseUnavailable(new QueryFailedError('SELECT 1', [], Object.assign(new Error('syntax error'), { code: '42601' })))).toBe(false);
    expect(isDatabaseUnavailable(new Error('boom'))).toBe(false);
    expect(isDatabaseUnavailable(new Error('boom', { cause: new Error('a bug') }))).toBe(false);
    // A stream written after its end is a bug of ours unless pg says its connection is gone (its own words above).
    expect(isDatabaseUnavailable(Object.assign(new Error('write after end'), { code: 'ERR_STREAM_WRITE_AFTER_END' }))).toBe(false);
    const cyclic = new Error('a cycle');
    cyclic.cause = cyclic;
    expect(isDatabaseUnavailable(cyclic)).toBe(false);
    expect(isDatabaseUnavailable(Object.defineProperty(new Error('odd'), 'cause', { get: () => { throw new Error('no'); } }))).toBe(false);
  });
});
