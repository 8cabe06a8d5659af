import { randomUUID } from 'node:crypto';
import { BulkModule } from '../../../src/bulk/bulk.module';
import { ChunkLease, ChunkLeases, LeaseLook } from '../../../src/bulk/chunk-leases';
import { ChunkLeasesRepository, LapsedLease } from '../../../src/bulk/chunk-leases.repository';
import { ManualScheduler } from '../../helpers/manual-clock';
import { deferred } from '../lookups';
import { Medium, startMedium } from '../medium';

const QUEUE = 'lease-test';
const LEASE_SECONDS = 10;
const LEASE_MS = LEASE_SECONDS * 1000;

/**
 * Bulk chunk leases (src/bulk/chunk-leases.ts): each run of a chunk holds a lease renewed by the lease
 * look every fifth of BULK_CHUNK_LEASE_SECONDS; a lease nobody renewed for a lease period by the clock is
 * claimed by one instance, which hands its chunk out again; its old worker learns at its next renewal
 * that it lost it. Two instances are two module trees on one database (test/medium/medium.ts,
 * `joining`); nothing looks unless the test runs a look, so no look of the service's own can race the
 * test's (the e2e version failed CI on exactly that: a renewal racing the app's own look).
 */
describe('bulk chunk leases', () => {
  let a: Medium;
  let b: Medium;
  let queue: { schema: string; name: string };
  beforeAll(async () => {
    const env = { BULK_CHUNK_LEASE_SECONDS: String(LEASE_SECONDS) };
    a = await startMedium({ imports: [BulkModule], env });
    b = await startMedium({ imports: [BulkModule], env, joining: a });
    queue = { schema: a.config.bulk.queueSchema, name: a.config.bulk.queueName };
  });
  afterAll(async () => {
    await b?.close();
    await a?.close();
  });

  const look = (instance: Medium) => instance.jobs.run<LeaseLook>(ChunkLeases.JOB);

  /** A queue job's lease as the table holds it. */
  async function leaseOf(queueJobId: string): Promise<{ holder: string; renewed_at: Date } | undefined> {
    const rows: Array<{ holder: string; renewed_at: Date }> = await a.db.query(`SELECT holder, renewed_at FROM bulk_chunk_leases WHERE queue_job_id = $1`, [queueJobId]);
    return rows[0];
  }

  /** A chunk of the service's queue that a worker took (active), as pg-boss marks it, at `startedOn`; no retry left, so handing it out fails it for good. */
  async function activeChunk(startedOn: Date): Promise<string> {
    const id = randomUUID();
    await a.db.query(`INSERT INTO ${queue.schema}.job (id, name, data, state, started_on, retry_limit) VALUES ($1, $2, $3, 'active', $4, 0)`, [
      id,
      queue.name,
      JSON.stringify({ jobId: randomUUID(), chunk: 0, accountId: randomUUID() }), // a bulk job that does not exist
      startedOn,
    ]);
    return id;
  }
  const stateOf = async (id: string) => ((await a.db.query(`SELECT state FROM ${queue.schema}.job WHERE id = $1`, [id])) as Array<{ state: string }>)[0]?.state;

  it('the lease look is a job every fifth of the lease', () => {
    expect(a.jobs.everyMs(ChunkLeases.JOB)).toBe(LEASE_MS / 5);
  });

  it('instances looking for lapsed leases at once claim each exactly once, and leave a renewed one alone', async () => {
    const lapsed = Array.from({ length: 40 }, () => randomUUID());
    const renewed = randomUUID();
    const repositories = [a.get(ChunkLeasesRepository), b.get(ChunkLeasesRepository)];
    for (const id of lapsed) await repositories[0].take(id, QUEUE, 'dead', a.clock.date());
    await a.clock.advance(LEASE_MS + 1000);
    await repositories[1].take(renewed, QUEUE, 'alive', a.clock.date());

    // Four looks at once, two on each instance's own pool.
    const before = a.clock.inMs(-LEASE_MS);
    const claims = await Promise.all([0, 1, 0, 1].map((i) => repositories[i].claimLapsed(before)));
    const claimed = claims.flat().map((lease: LapsedLease) => lease.queueJobId);
    expect(claimed.sort()).toEqual([...lapsed].sort());
    for (const id of lapsed) expect(await leaseOf(id)).toBeUndefined();
    expect((await leaseOf(renewed))?.holder).toBe('alive');
    await a.db.query(`DELETE FROM bulk_chunk_leases WHERE queue_job_id = $1`, [renewed]);
  });

  it('every run of a chunk holds a lease of its own, even two runs on one instance', async () => {
    const leases = a.get(ChunkLeases);
    const [first, second] = [randomUUID(), randomUUID()];
    const release = deferred();
    const started = [deferred(), deferred()];
    const runs = [first, second].map((id, i) =>
      leases.hold(QUEUE, id, () => {
        started[i].resolve();
        return release.promise;
      }),
    );
    await Promise.all(started.map((s) => s.promise));
    const holders = [(await leaseOf(first))?.holder, (await leaseOf(second))?.holder];
    expect(holders).toEqual([expect.any(String), expect.any(String)]);
    expect(holders[0]).not.toBe(holders[1]);
    release.resolve();
    await Promise.all(runs);
    expect(await leaseOf(first)).toBeUndefined();
    expect(await leaseOf(second)).toBeUndefined();
  });

  it('renews the leases it holds to the time of the look; a lease renewed is not lapsed', async () => {
    const leases = a.get(ChunkLeases);
    const id = randomUUID();
    const end = deferred();
    const started = deferred();
    const run = leases.hold(QUEUE, id, () => (started.resolve(), end.promise));
    try {
      await started.promise;
      for (let renewal = 0; renewal < 3; renewal++) {
        await a.clock.advance(LEASE_MS / 2);
        expect(await look(a)).toMatchObject({ renewed: 1, lost: 0 });
        expect((await leaseOf(id))?.renewed_at.getTime()).toBe(a.clock.now());
        // The other instance's look, one and a half lease periods after the run began: nothing lapsed.
        expect(await look(b)).toMatchObject({ handedOut: 0 });
      }
    } finally {
      end.resolve();
      await run;
    }
  });

  it('a chunk whose worker stopped renewing is handed out again by another instance after the lease period, and its worker learns it lost the lease', async () => {
    const leases = a.get(ChunkLeases);
    const chunk = await activeChunk(a.clock.date());
    const end = deferred();
    const started = deferred<ChunkLease>();
    const run = leases.hold(queue.name, chunk, async (lease) => {
      started.resolve(lease);
      await end.promise;
      return lease.lost;
    });
    try {
      const lease = await started.promise;
      // The worker's instance is paused (its looks do not run); the lease period has not passed yet.
      await a.clock.advance(LEASE_MS - 1000);
      expect(await look(b)).toMatchObject({ handedOut: 0 });
      expect(await stateOf(chunk)).toBe('active');
      await a.clock.advance(2000);
      expect(await look(b)).toMatchObject({ handedOut: 1 });
      expect(await stateOf(chunk)).toBe('failed'); // handed out again: here its only attempt, so failed for good
      expect(await leaseOf(chunk)).toBeUndefined();
      // The paused instance runs again: its next look finds the lease gone, and the worker stops taking numbers.
      expect(lease.lost).toBe(false);
      expect(await look(a)).toMatchObject({ renewed: 0, lost: 1 });
      expect(lease.lost).toBe(true);
    } finally {
      end.resolve();
    }
    expect(await run).toBe(true);
  });

  it("a worker whose lease was taken back learns it at its next renewal; the new run's lease is not released by the old one", async () => {
    const leases = a.get(ChunkLeases);
    const id = randomUUID();
    const seen = deferred<ChunkLease>();
    const end = deferred();
    const run = leases.hold(QUEUE, id, async (lease) => {
      seen.resolve(lease);
      await end.promise;
      return lease.lost;
    });
    const lease = await seen.promise;
    // Another instance found it lapsed and handed the chunk out: a new run there took it.
    await b.get(ChunkLeasesRepository).take(id, QUEUE, 'the-new-run', a.clock.date());
    expect(await look(a)).toMatchObject({ lost: 1 });
    expect(lease.lost).toBe(true);
    end.resolve();
    expect(await run).toBe(true);
    expect((await leaseOf(id))?.holder).toBe('the-new-run');
    await a.db.query(`DELETE FROM bulk_chunk_leases WHERE queue_job_id = $1`, [id]);
  });

  it('a queue job active with no lease (its worker died before taking it) is handed out after the lease period, not at its expiration', async () => {
    // The fault suite once saw a bulk job stay at 180/200 for a minute after both instances were killed:
    // a chunk taken from the queue (active) by a worker killed before it took the chunk's lease.
    const orphan = await activeChunk(a.clock.date());
    // Chunks with no lease are looked for once a lease period: the first look after one has passed does.
    await a.clock.advance(LEASE_MS - 1000);
    expect(await look(a)).toMatchObject({ adopted: 0, handedOut: 0 }); // started too recently: its worker may be taking its lease
    expect(await stateOf(orphan)).toBe('active');
    await a.clock.advance(LEASE_MS);
    // Adopted with a lease that lapsed at once, and handed out by the same look.
    expect(await look(a)).toMatchObject({ adopted: 1, handedOut: 1 });
    expect(await stateOf(orphan)).toBe('failed');
    // Left alone: an active job whose lease is held, and one started too recently.
    const leased = await activeChunk(a.clock.inMs(-2 * LEASE_MS));
    await a.get(ChunkLeasesRepository).take(leased, queue.name, 'alive', a.clock.date());
    const recent = await activeChunk(a.clock.date());
    expect(await a.get(ChunkLeasesRepository).adoptOrphans(queue.schema, queue.name, a.clock.inMs(-LEASE_MS))).toBe(0);
    expect((await leaseOf(leased))?.holder).toBe('alive');
    expect(await leaseOf(recent)).toBeUndefined();
    expect([await stateOf(leased), await stateOf(recent)]).toEqual(['active', 'active']);
    await a.db.query(`DELETE FROM bulk_chunk_leases WHERE queue_job_id = $1`, [leased]);
    await a.db.query(`DELETE FROM ${queue.schema}.job WHERE id = ANY($1::uuid[])`, [[leased, recent]]);
  });

  it('a run that ends leaves the lease of a newer run of the same queue job on this instance renewed', async () => {
    const leases = a.get(ChunkLeases);
    const id = randomUUID();
    const [oldStarted, newStarted, endOld, endNew] = [deferred(), deferred(), deferred(), deferred()];
    const oldRun = leases.hold(QUEUE, id, () => (oldStarted.resolve(), endOld.promise));
    await oldStarted.promise;
    const oldHolder = (await leaseOf(id))!.holder;
    // Its lease taken back (the worker paused), the chunk handed out again, to this very instance:
    const newRun = leases.hold(QUEUE, id, () => (newStarted.resolve(), endNew.promise));
    await newStarted.promise;
    const newHolder = (await leaseOf(id))!.holder;
    expect(newHolder).not.toBe(oldHolder);
    try {
      endOld.resolve();
      await oldRun;
      expect((await leaseOf(id))?.holder).toBe(newHolder);
      // The looks after the old run ended renew the new run's lease, still its own.
      for (let renewal = 0; renewal < 2; renewal++) {
        await a.clock.advance(LEASE_MS / 5);
        expect(await look(a)).toMatchObject({ lost: 0 });
        expect(await leaseOf(id)).toEqual({ holder: newHolder, renewed_at: a.clock.date() });
      }
    } finally {
      endNew.resolve();
      await newRun;
    }
  });

  it('renewing returns only the leases still held by their holder', async () => {
    const repository = a.get(ChunkLeasesRepository);
    const [mine, takenBack] = [randomUUID(), randomUUID()];
    await repository.take(mine, QUEUE, 'me', a.clock.date());
    await repository.take(takenBack, QUEUE, 'someone-else', a.clock.date());
    expect(await repository.renew([{ queueJobId: mine, holder: 'me' }, { queueJobId: takenBack, holder: 'me' }], a.clock.date())).toEqual([mine]);
    await a.db.query(`DELETE FROM bulk_chunk_leases WHERE queue_job_id = ANY($1::uuid[])`, [[mine, takenBack]]);
  });

  it('after stop, a look does nothing (the queue has stopped its workers)', async () => {
    const leases = new ChunkLeases(a.get(ChunkLeasesRepository), a.config, a.clock, new ManualScheduler());
    const id = randomUUID();
    await a.get(ChunkLeasesRepository).take(id, QUEUE, 'dead', a.clock.inMs(-2 * LEASE_MS));
    await leases.stop();
    const handedOut: string[] = [];
    expect(await leases.look(async (lease) => void handedOut.push(lease.queueJobId))).toEqual({ renewed: 0, lost: 0, adopted: 0, handedOut: 0 });
    expect(handedOut).toEqual([]);
    expect((await leaseOf(id))?.holder).toBe('dead');
    await a.db.query(`DELETE FROM bulk_chunk_leases WHERE queue_job_id = $1`, [id]);
  });
});
