import { refundStatement } from './credits.repository';

/**
 * A refund of a charge that may be settled already must commit durably: the abandoned-charges sweep
 * skips settled charges, so a refund lost in a PostgreSQL crash (synchronous_commit off) would leave a
 * 503 charged for good. The refund of an unsettled charge may commit asynchronously: lost, it leaves the
 * charge unsettled and the sweep refunds it again.
 */
describe('refundStatement', () => {
  const turnsOffSynchronousCommit = /synchronous_commit', 'off'/;

  it('commits a durable refund synchronously (no synchronous_commit off)', () => {
    expect(refundStatement('c.id = $1 AND c.answered_at IS NULL', 'durable')).not.toMatch(turnsOffSynchronousCommit);
  });

  it('commits the refund of an unsettled charge asynchronously, as the charge and settle do', () => {
    expect(refundStatement('c.id = $1 AND c.settled_at IS NULL', 'async')).toMatch(turnsOffSynchronousCommit);
  });

  it('keeps the charge condition and the row lock in both', () => {
    for (const commit of ['async', 'durable'] as const) {
      const sql = refundStatement('c.reference = $1', commit);
      expect(sql).toContain('WHERE c.reference = $1 AND');
      expect(sql).toContain('FOR UPDATE OF c');
    }
  });
});
