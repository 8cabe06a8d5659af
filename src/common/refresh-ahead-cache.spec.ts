import { RefreshAheadCache } from './refresh-ahead-cache';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A store whose reads the test can count, hold and fail. */
function store(initial: string) {
  let value: string | undefined = initial;
  let failing = false;
  let gate: Promise<void> | undefined;
  const reads: string[] = [];
  return {
    reads,
    set: (next: string | undefined) => (value = next),
    fail: (on: boolean) => (failing = on),
    /** Reads started from now on wait until `open()`. */
    hold(): () => void {
      let open!: () => void;
      gate = new Promise((resolve) => (open = resolve));
      return () => {
        gate = undefined;
        open();
      };
    },
    load: async (key: string) => {
      const read = value; // what the database held when the read began
      reads.push(key);
      if (gate) await gate;
      if (failing) throw new Error('database away');
      return read === undefined ? undefined : { read };
    },
  };
}

describe('RefreshAheadCache', () => {
  it('answers a fresh value without a read, and concurrent first calls share one read', async () => {
    const db = store('a');
    const cache = new RefreshAheadCache({ max: 10, maxAgeMs: 60_000, refreshAfterMs: 60_000, load: db.load });
    const first = await Promise.all([cache.get('k'), cache.get('k'), cache.get('k')]);
    expect(first).toEqual([{ read: 'a' }, { read: 'a' }, { read: 'a' }]);
    db.set('b');
    expect(await cache.get('k')).toEqual({ read: 'a' });
    expect(db.reads).toEqual(['k']);
  });

  it('past refreshAfterMs answers the kept value at once and one shared read replaces it', async () => {
    const db = store('a');
    const cache = new RefreshAheadCache({ max: 10, maxAgeMs: 60_000, refreshAfterMs: 20, load: db.load });
    await cache.get('k');
    await sleep(50);
    db.set('b');
    const open = db.hold();
    // The refresh is held: the callers are not.
    expect(await Promise.all([cache.get('k'), cache.get('k')])).toEqual([{ read: 'a' }, { read: 'a' }]);
    expect(db.reads).toEqual(['k', 'k']);
    open();
    await sleep(10);
    expect(await cache.get('k')).toEqual({ read: 'b' });
  });

  it('never answers a value older than maxAgeMs: a failed refresh leaves it only until then, and the error is the caller’s', async () => {
    const db = store('a');
    const cache = new RefreshAheadCache({ max: 10, maxAgeMs: 1000, refreshAfterMs: 10, load: db.load });
    await cache.get('k');
    await sleep(20);
    db.fail(true);
    expect(await cache.get('k')).toEqual({ read: 'a' }); // due for a refresh, still young enough
    await sleep(5);
    expect(await cache.get('k')).toEqual({ read: 'a' }); // the refresh failed: the value stays until maxAgeMs
    await sleep(1100);
    await expect(cache.get('k')).rejects.toThrow('database away');
    db.fail(false);
    db.set('c');
    expect(await cache.get('k')).toEqual({ read: 'c' });
  });

  it('a delete discards the read in flight: a value read before a change committed does not come back', async () => {
    const db = store('old');
    const cache = new RefreshAheadCache({ max: 10, maxAgeMs: 60_000, refreshAfterMs: 10, load: db.load });
    await cache.get('k');
    await sleep(30);
    const open = db.hold();
    expect(await cache.get('k')).toEqual({ read: 'old' }); // starts a refresh that reads 'old' and is held
    db.set('new'); // the change commits...
    cache.delete('k'); // ...and its writer drops this instance's copy
    open();
    await sleep(10);
    expect(await cache.get('k')).toEqual({ read: 'new' });
    expect(await cache.get('k')).toEqual({ read: 'new' });
  });

  it('a call whose shared first read is discarded by a delete gets the current value, not nothing', async () => {
    const db = store('old');
    const cache = new RefreshAheadCache({ max: 10, maxAgeMs: 60_000, refreshAfterMs: 60_000, load: db.load });
    const open = db.hold();
    const pending = cache.get('k');
    await sleep(5);
    db.set('new');
    cache.delete('k');
    open();
    expect(await pending).toEqual({ read: 'new' });
  });

  it('every call waiting for a read that a delete discards reads again, and gets the current value', async () => {
    const db = store('old');
    const cache = new RefreshAheadCache({ max: 10, maxAgeMs: 60_000, refreshAfterMs: 60_000, load: db.load });
    const open = db.hold();
    const waiting = [cache.get('k'), cache.get('k'), cache.get('k')];
    await sleep(5);
    db.set('new');
    cache.delete('k');
    open();
    expect(await Promise.all(waiting)).toEqual([{ read: 'new' }, { read: 'new' }, { read: 'new' }]);
  });

  it('a call that finds its value too old does not take a read that began too long ago either', async () => {
    const db = store('a');
    // maxAgeMs leaves a loaded machine's late timers room: the value must still be young after sleep(20).
    const cache = new RefreshAheadCache({ max: 10, maxAgeMs: 1000, refreshAfterMs: 10, load: db.load });
    await cache.get('k');
    await sleep(20);
    const open = db.hold();
    db.set('b');
    expect(await cache.get('k')).toEqual({ read: 'a' }); // a refresh reading 'b' starts, and is held
    await sleep(1050); // the value and the refresh in flight are both older than maxAgeMs now
    db.set('c');
    const asked = cache.get('k');
    await sleep(5);
    open();
    expect(await asked).toEqual({ read: 'c' });
  });

  it('a key with no value answers undefined and keeps nothing; a failed first read is the caller’s error', async () => {
    const db = store('a');
    db.set(undefined);
    const cache = new RefreshAheadCache({ max: 10, maxAgeMs: 60_000, refreshAfterMs: 60_000, load: db.load });
    expect(await cache.get('k')).toBeUndefined();
    db.set('b');
    expect(await cache.get('k')).toEqual({ read: 'b' });
    db.fail(true);
    await expect(cache.get('other')).rejects.toThrow('database away');
  });

  it('refuses a refresh point outside (0, maxAgeMs]', () => {
    expect(() => new RefreshAheadCache({ max: 1, maxAgeMs: 10, refreshAfterMs: 20, load: async () => ({}) })).toThrow('refreshAfterMs');
  });
});
