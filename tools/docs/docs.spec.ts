import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseEnv } from 'node:util';
import { BUILT_IN_CHECKS } from '../../src/checks/built-in-checks';
import { CALLBACK_DEFAULTS, validateEnvironment } from '../../src/config/environment';
import { docSources, duration, envExample, GeneratedRegionError, regenerate, staleFiles } from './render';

const ROOT = resolve(__dirname, '..', '..');

describe('the generated documentation (npm run docs; CI fails when it is stale, as for openapi.json)', () => {
  it('is current: every generated region of the docs, and .env.example, is what npm run docs writes', () => {
    const stale = staleFiles(ROOT, docSources());
    if (stale.length > 0) throw new Error(`stale, run npm run docs: ${stale.join(', ')}`);
  });

  it("is stale when a price variable's default changes and the docs are not written again", () => {
    const [first, ...others] = BUILT_IN_CHECKS;
    const repriced = [{ ...first, price: { ...first.price, default: first.price.default + 1 } }, ...others];
    expect(staleFiles(ROOT, docSources(repriced))).toEqual(['.env.example', 'docs/api.md', 'docs/operations.md']);
  });

  it('is stale when a check is added, in every list of checks', () => {
    const extra = { ...BUILT_IN_CHECKS[0], name: 'roaming', title: 'Roaming', price: { variable: 'PRICE_ROAMING', default: 3 }, cacheTtlSeconds: { variable: 'CACHE_TTL_ROAMING_SECONDS', default: 600 } };
    expect(staleFiles(ROOT, docSources([...BUILT_IN_CHECKS, extra]))).toEqual(['.env.example', 'docs/api.md', 'docs/behaviour.md', 'docs/operations.md']);
  });

  it('.env.example, read as a .env file, sets each variable to its default', () => {
    const text = readFileSync(join(ROOT, '.env.example'), 'utf8');
    const set = parseEnv(text);
    expect(Object.keys(set).length).toBeGreaterThan(50);
    // The callback variables' defaults are applied after their deprecated names (AppConfig), so .env.example sets them.
    expect({ ...validateEnvironment(set) }).toEqual({ ...validateEnvironment({}), ...numbersOf(set), ...CALLBACK_DEFAULTS });
  });

  it('names a region it does not know, or one that does not end, with the line', () => {
    expect(() => regenerate('a\n<!-- generated: nonsense -->\n<!-- /generated: nonsense -->', docSources(), 'docs/x.md')).toThrow(
      new GeneratedRegionError('docs/x.md:2: no generated region is called "nonsense" (checks, settings-example, watched-fields, adapters, adapter, env-reference, env-section, risk-reasons, risk-thresholds, risk-destinations)'),
    );
    expect(() => regenerate('<!-- generated: checks -->\ntext', docSources(), 'docs/x.md')).toThrow(/docs\/x\.md:1: the generated region "checks" has no end line/);
    expect(() => regenerate('<!-- generated: adapter pigeon -->\n<!-- /generated: adapter -->', docSources(), 'docs/x.md')).toThrow(/not "pigeon"/);
  });

  it('writes a region again whatever it held, leaving the prose around it', () => {
    const text = 'before\n<!-- generated: watched-fields -->\nanything\n<!-- /generated: watched-fields -->\nafter';
    const once = regenerate(text, docSources(), 'docs/x.md');
    expect(once.startsWith('before\n<!-- generated: watched-fields (npm run docs')).toBe(true);
    expect(once.endsWith('\n<!-- /generated: watched-fields -->\nafter')).toBe(true);
    expect(once).not.toContain('anything');
    expect(regenerate(once, docSources(), 'docs/x.md')).toBe(once);
  });

  it('says cache lifetimes as people do', () => {
    expect([0, 45, 600, 3600, 86_400, 2_592_000].map(duration)).toEqual(['not cached', '45 s', '10 min', '1 h', '24 h', '30 days']);
  });

  it('comments out in .env.example the variables without a default, and leaves out deprecated names', () => {
    const text = envExample(docSources());
    expect(text).toMatch(/^# DATABASE_URL=postgres:\/\//m);
    expect(text).toMatch(/^PORT=3000$/m);
    expect(text).not.toContain('BULK_WEBHOOK_TIMEOUT_MS');
    expect(text.split('\n').filter((line) => line.length > 100)).toEqual([]);
  });
});

/** The values of .env.example as validateEnvironment reads them (the check variables as numbers). */
function numbersOf(set: NodeJS.Dict<string>): Record<string, number> {
  return Object.fromEntries(Object.entries(set).filter(([name]) => /^(PRICE_|CACHE_TTL_)/.test(name)).map(([name, value]) => [name, Number(value)]));
}
