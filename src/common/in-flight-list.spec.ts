import { execFileSync } from 'node:child_process';
import { resolve } from 'node:path';
import { InFlightList } from './in-flight-list';

const ROOT = resolve(__dirname, '../..');

type Case = 'none' | 'kept' | 'set' | 'list' | 'drain';

/**
 * Bytes a case of in-flight-list.retention.ts left on the heap, in fresh processes (`none`: the baseline):
 * the median of three. The script's major GC is a plain `gc()` (Node 20 ran the `{ type: 'major' }` form
 * as a scavenge: a CI run then read 6.2% kept for the list). The GC is single-threaded (concurrent
 * sweeping moved the readings by several MB) and the young generation's size pinned (V8 sizes it from the
 * machine's memory); the parent's NODE_OPTIONS are not passed on.
 */
function leftBy(structure: Case): number {
  const readings = [0, 1, 2].map(() => {
    const output = execFileSync(
      process.execPath,
      [
        '--expose-gc',
        '--single-threaded-gc',
        '--min-semi-space-size=16',
        '--max-semi-space-size=16',
        '-r',
        require.resolve('ts-node/register/transpile-only'),
        resolve(__dirname, 'in-flight-list.retention.ts'),
        structure,
      ],
      { cwd: ROOT, env: { ...process.env, NODE_OPTIONS: '', TS_NODE_PROJECT: resolve(ROOT, 'tsconfig.json') }, encoding: 'utf8', timeout: 60_000 },
    );
    return (JSON.parse(output) as { left: number }).left;
  });
  return readings.sort((a, b) => a - b)[1];
}

describe('InFlightList', () => {
  it('counts and lists what is in flight; a removal takes effect once', () => {
    const list = new InFlightList<string>();
    const removeA = list.add('a');
    const removeB = list.add('b');
    list.add('c');
    removeB();
    removeB();
    expect(list.size).toBe(2);
    expect(list.items()).toEqual(['c', 'a']);
    removeA();
    expect(list.items()).toEqual(['c']);
  });

  it('gives a copy: removing items while going through it misses none', () => {
    const list = new InFlightList<string>();
    const removals = new Map(['a', 'b', 'c'].map((item) => [item, list.add(item)]));
    const seen: string[] = [];
    for (const item of list.items()) {
      seen.push(item);
      removals.get(item)!();
    }
    expect(seen).toEqual(['c', 'b', 'a']);
    expect(list.size).toBe(0);
  });
});

describe('what the structures of in-flight calls leave behind for the old generation (in-flight-list.retention.ts)', () => {
  let baseline = 0;
  let all = 0;
  /** What the case left beyond the baseline's churn, as a share of what the items weighed (the `kept` case). */
  const keptShare = (structure: 'set' | 'list' | 'drain') => (leftBy(structure) - baseline) / all;

  beforeAll(() => {
    baseline = leftBy('none');
    all = leftBy('kept') - baseline;
  });

  it('the measure sees items still referenced', () => {
    expect(all).toBeGreaterThan(5_000_000);
  });

  it('a Set keeps most of its removed items (what HttpDrain used: the measure tells it apart)', () => {
    expect(keptShare('set')).toBeGreaterThan(0.33);
  });

  it('InFlightList keeps none of its removed items', () => {
    expect(keptShare('list')).toBeLessThan(0.05);
  });

  it('HttpDrain keeps none of the responses it tracked', () => {
    expect(keptShare('drain')).toBeLessThan(0.05);
  });
});
