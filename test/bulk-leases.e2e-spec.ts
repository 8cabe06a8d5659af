import { randomUUID } from 'node:crypto';
import { ChunkLease, ChunkLeases } from '../src/bulk/chunk-leases';
import { ChunkLeasesRepository, LapsedLease } from '../src/bulk/chunk-leases.repository';
import { AppConfig } from '../src/config/app-config';
import { eventually } from './helpers/eventually';
import { startTestApp, TestApp } from './helpers/test-app';

const QUEUE = 'lease-test';

/** Leases of this instance renewed (and looked at) every 200 ms: a lease of 1 s. */
function fastLeases(repository: ChunkLeasesRepository): ChunkLeases {
  return new ChunkLeases(repository, { bulk: { chunkLeaseSeconds: 1 } } as AppConfig);
}

describe('bulk chunk leases', () => {
  let t: TestApp;
  let repository: ChunkLeasesRepository;
  beforeAll(async () => {
    t = await startTestApp();
    repository = t.app.get(ChunkLeasesRepository);
  });
  afterAll(async () => {
    await t.close();
  });

  /** A queue job's lease as the table holds it (its renewal time as PostgreSQL prints it, to the microsecond). */
  async function leaseOf(queueJobId: string): Promise<{ holder: string; renewed_at: string } | undefined> {
    const rows: Array<{ holder: string; renewed_at: string }> = await t.db.query(
      `SELECT holder, renewed_at::text AS renewed_at FROM bulk_chunk_leases WHERE queue_job_id = $1`,
      [queueJobId],
    );
    return rows[0];
  }

  async function holderOf(queueJobId: string): Promise<string | undefined> {
    return (await leaseOf(queueJobId))?.holder;
  }

  it('instances looking for lapsed leases at once claim each exactly once, and leave a renewed one alone', async () => {
    const lapsed = Array.from({ length: 40 }, () => randomUUID());
    const renewed = randomUUID();
    for (const id of lapsed) {
      await t.db.query(`INSERT INTO bulk_chunk_leases (queue_job_id, queue_name, holder, renewed_at) VALUES ($1, $2, 'dead', now() - interval '1 minute')`, [id, QUEUE]);
    }
    await t.db.query(`INSERT INTO bulk_chunk_leases (queue_job_id, queue_name, holder) VALUES ($1, $2, 'alive')`, [renewed, QUEUE]);

    const claims = await Promise.all([0, 1, 2, 3].map(() => repository.claimLapsed(30)));
    const claimed = claims.flat().map((lease: LapsedLease) => lease.queueJobId);
    // No lease handed out twice (the running app's own look may have claimed some of them too).
    expect(new Set(claimed).size).toBe(claimed.length);
    expect(claimed.length).toBeGreaterThan(0);
    for (const id of lapsed) expect(await holderOf(id)).toBeUndefined();
    expect(claimed).not.toContain(renewed);
    expect(await holderOf(renewed)).toBe('alive');
  });

  it('every run of a chunk holds a lease of its own, even two runs on one instance', async () => {
    const leases = fastLeases(repository);
    const [first, second] = [randomUUID(), randomUUID()];
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    const runs = [first, second].map((id) => leases.hold(QUEUE, id, () => released));
    expect(await eventually(async () => [await holderOf(first), await holderOf(second)], (holders) => holders.every(Boolean), 5000)).toEqual([
      expect.any(String),
      expect.any(String),
    ]);
    expect(await holderOf(first)).not.toBe(await holderOf(second));
    release();
    await Promise.all(runs);
    expect(await holderOf(first)).toBeUndefined();
  });

  it('a worker whose lease was taken back learns it at its next renewal; the new run\'s lease is not released by the old one', async () => {
    const leases = fastLeases(repository);
    leases.start(async () => undefined);
    const id = randomUUID();
    let seen: ChunkLease | undefined;
    const run = leases.hold(QUEUE, id, async (lease) => {
      seen = lease;
      // Another instance found it lapsed (the worker paused) and handed the chunk out: a new run took it.
      // (The claim itself is the first case's: backdated here, this instance's own renewal or look could
      // take the row between the backdate and the claim.)
      await repository.take(id, QUEUE, 'the-new-run');
      // The new run is on another instance, alive and renewing: this instance's look must not find its lease lapsed.
      await t.db.query(`UPDATE bulk_chunk_leases SET renewed_at = now() + interval '1 minute' WHERE queue_job_id = $1`, [id]);
      return eventually(() => lease.lost, (lost) => lost, 5000, 50);
    });
    try {
      expect(await run).toBe(true);
      expect(seen?.lost).toBe(true);
      expect(await holderOf(id)).toBe('the-new-run');
    } finally {
      await leases.stop();
      await t.db.query(`DELETE FROM bulk_chunk_leases WHERE queue_job_id = $1`, [id]);
    }
  });

  it('a queue job active with no lease (its worker died before taking it) is handed out after the lease period, not at its expiration', async () => {
    // The fault suite once saw a bulk job stay at 180/200 for a minute after both instances were killed:
    // a chunk taken from the queue (active) by a worker killed before it took the chunk's lease.
    const { queueSchema, queueName } = t.app.get(AppConfig).bulk;
    const [orphan, leased, recent] = [randomUUID(), randomUUID(), randomUUID()];
    const activeSince = (id: string, seconds: number) =>
      t.db.query(`INSERT INTO ${queueSchema}.job (id, name, data, state, started_on) VALUES ($1, $2, $3, 'active', now() - make_interval(secs => $4))`, [
        id,
        queueName,
        JSON.stringify({ jobId: randomUUID(), chunk: 0, accountId: randomUUID() }), // a bulk job that does not exist: its run ends at once
        seconds,
      ]);
    const stateOf = async (id: string) => ((await t.db.query(`SELECT state FROM ${queueSchema}.job WHERE id = $1`, [id])) as Array<{ state: string }>)[0]?.state;
    try {
      await activeSince(orphan, 60);
      // The running app looks once a lease period (BULK_CHUNK_LEASE_SECONDS, 10 s): it adopts the orphan and hands it out.
      expect(await eventually(() => stateOf(orphan), (state) => state !== 'active', 30_000, 100)).not.toBe('active');
      // Left alone: an active job whose lease is held, and one started too recently (its worker may be taking its lease).
      await activeSince(leased, 60);
      await repository.take(leased, queueName, 'alive');
      await activeSince(recent, 0);
      expect(await repository.adoptOrphans(queueSchema, queueName, 30)).toBe(0);
      expect(await holderOf(leased)).toBe('alive');
      expect(await holderOf(recent)).toBeUndefined();
      expect([await stateOf(leased), await stateOf(recent)]).toEqual(['active', 'active']);
    } finally {
      await t.db.query(`DELETE FROM ${queueSchema}.job WHERE id = ANY($1::uuid[])`, [[orphan, leased, recent]]);
      await t.db.query(`DELETE FROM bulk_chunk_leases WHERE queue_job_id = ANY($1::uuid[])`, [[orphan, leased, recent]]);
    }
  });

  it('a run that ends leaves the lease of a newer run of the same queue job on this instance renewed', async () => {
    const leases = fastLeases(repository);
    leases.start(async () => undefined);
    const id = randomUUID();
    let endOld!: () => void;
    let endNew!: () => void;
    const oldRun = leases.hold(QUEUE, id, () => new Promise<void>((resolve) => (endOld = resolve)));
    const oldHolder = await eventually(() => holderOf(id), Boolean, 5000, 20);
    // Its lease taken back (the worker paused), the chunk handed out again, to this very instance:
    const newRun = leases.hold(QUEUE, id, () => new Promise<void>((resolve) => (endNew = resolve)));
    const newHolder = await eventually(() => holderOf(id), (holder) => holder !== undefined && holder !== oldHolder, 5000, 20);
    try {
      endOld();
      await oldRun;
      // The renewals after the old run ended (every 200 ms) are still the new run's: its lease is renewed
      // again, still its own. (Not backdated to see it: a lease backdated past the lease period could be
      // claimed as lapsed by the app's own look, or this instance's, before the renewal.)
      const rowOf = () => leaseOf(id);
      // Twice: a renewal that read the held leases before the old run ended may still land after it.
      let since = await rowOf();
      expect(since?.holder).toBe(newHolder);
      for (const renewal of [1, 2]) {
        const after = since!.renewed_at;
        const renewed = await eventually(rowOf, (row) => row === undefined || row.renewed_at !== after, 5000, 50);
        expect({ renewal, holder: renewed?.holder, renewed: renewed !== undefined && renewed.renewed_at !== after }).toEqual({ renewal, holder: newHolder, renewed: true });
        since = renewed;
      }
    } finally {
      endNew();
      await newRun;
      await leases.stop();
    }
  });

  it('renewing returns only the leases still held by their holder', async () => {
    const [mine, takenBack] = [randomUUID(), randomUUID()];
    await repository.take(mine, QUEUE, 'me');
    await repository.take(takenBack, QUEUE, 'someone-else');
    expect(await repository.renew([{ queueJobId: mine, holder: 'me' }, { queueJobId: takenBack, holder: 'me' }])).toEqual([mine]);
  });
});
