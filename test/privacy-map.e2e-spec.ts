import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from 'pg';

const CLASSES = ['number', 'derived', 'free-text', 'none'] as const;
const TEXT_TYPES = ['text', 'character varying', 'character', 'json', 'jsonb'];

/** `table.column` → class, from the `privacy-columns` block of docs/privacy.md. */
function dataMap(): Map<string, string> {
  const doc = readFileSync(join(__dirname, '..', 'docs', 'privacy.md'), 'utf8');
  const block = /```privacy-columns\n([\s\S]*?)```/.exec(doc);
  if (!block) throw new Error('docs/privacy.md has no ```privacy-columns block');
  return new Map(
    block[1]
      .split('\n')
      .filter((line) => line.trim() !== '')
      .map((line) => {
        const [column, kind] = line.trim().split(/\s+/);
        return [column, kind];
      }),
  );
}

/**
 * The data map stays true: every column of the migrated schema that can hold text (where a phone number,
 * its masked form or a hash of it could be kept) is in docs/privacy.md's list, classed; the list names
 * no column the schema no longer has. A new migration adding such a column fails here until the map says
 * what the column holds (and, if it is a number, how it is retained and erased).
 */
describe('docs/privacy.md maps every text and JSON column of the migrated schema', () => {
  let db: Client;
  let columns: string[];
  beforeAll(async () => {
    db = new Client({ connectionString: process.env.DATABASE_URL });
    await db.connect();
    const rows = await db.query(
      `SELECT table_name || '.' || column_name AS name FROM information_schema.columns
        WHERE table_schema = 'public' AND data_type = ANY($1::text[]) ORDER BY 1`,
      [TEXT_TYPES],
    );
    columns = rows.rows.map((row: { name: string }) => row.name);
  });
  afterAll(() => db?.end());

  it('lists every such column with one of the classes number, derived, free-text, none', () => {
    const map = dataMap();
    expect(columns.length).toBeGreaterThan(50);
    expect(columns.filter((column) => !map.has(column))).toEqual([]);
    expect([...map.entries()].filter(([, kind]) => !(CLASSES as readonly string[]).includes(kind))).toEqual([]);
  });

  it('lists no column the schema does not have', () => {
    expect([...dataMap().keys()].filter((column) => !columns.includes(column))).toEqual([]);
  });

  it('names in its summary every table that holds a number or something derived from one', () => {
    const doc = readFileSync(join(__dirname, '..', 'docs', 'privacy.md'), 'utf8');
    const summary = doc.slice(doc.indexOf('## Summary'), doc.indexOf('## Retention'));
    const tables = [...dataMap().entries()].filter(([, kind]) => kind === 'number' || kind === 'derived').map(([column]) => column.split('.')[0]);
    expect([...new Set(tables)].filter((table) => !summary.includes(`\`${table}`))).toEqual([]);
  });
});
