import { readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { folderOf as moduleOf, sourceFiles } from './source-files';

/**
 * Each table has one writer: the module that owns it (docs/architecture.md). Others ask that module
 * (its service), inside a transaction their service opened when the writes must commit together.
 * This reads the SQL of every source file of src/ (INSERT INTO / UPDATE / DELETE FROM <table>) and
 * its TypeORM entity usage (getRepository, create, save, forFeature of an entity class) and fails
 * when a module writes, or reaches through TypeORM, another module's table. import-graph.spec.ts
 * cannot see these: SQL names tables, not files.
 */
const SRC = join(__dirname, '..');

const OWNER: Record<string, string> = {
  accounts: 'accounts',
  plans: 'accounts',
  api_keys: 'auth',
  account_settings: 'settings',
  ledger_entries: 'credits',
  idempotency_keys: 'idempotency',
  bulk_jobs: 'bulk',
  bulk_entries: 'bulk',
  bulk_chunk_leases: 'bulk',
  bulk_job_counts: 'bulk',
  watchlists: 'watchlists',
  watchlist_entries: 'watchlists',
  watchlist_rounds: 'watchlists',
  watchlist_changes: 'watchlists',
  account_events: 'webhooks',
  admin_audit: 'audit',
  risk_feedback: 'risk',
  number_erasures: 'erasures',
};

/**
 * Writes that cross a module today, each with why it is still there (docs/architecture.md, "Table
 * ownership"). The list may only shrink: a new entry needs the same argument.
 */
const KNOWN: Record<string, string> = {
  // The balance is the ledger's sum, kept by the same statement that appends the ledger row (money
  // invariant under concurrency): credits writes accounts.balance/spent_today and nothing else there.
  'credits -> accounts': 'balance columns, in the ledger statements',
  // The balance.low alert is detected and recorded in the charge statement itself (one statement on
  // the request path, so an alert is never lost nor doubled); moving it out needs a second statement
  // per charge on /filter. Left for a measured follow-up.
  'credits -> account_settings': 'low_balance_alerted, in the charge statement',
  'credits -> account_events': 'the balance.low event, in the charge statement',
};

/** Reads of another module's table that remain, with why. The list may only shrink. */
const KNOWN_READS: Record<string, string> = {
  'credits -> accounts': 'the balance and the day\'s spend, locked by the charge statement',
  'credits -> account_settings': 'daily_credit_limit and low_balance_threshold, read by the charge statement itself',
  // Guards inside idempotency's own atomic statements (take over / free a key only while the ledger
  // holds no charge for it; the state of a key's charge): splitting them would open a race.
  'idempotency -> ledger_entries': 'whether a key has a charge, inside the statement that acts on it',
};

/** A table name as SQL may spell it: bare, "quoted", schema-qualified (public.t, "public"."t"). */
const NAME = String.raw`(?:"?([a-z_][a-z0-9_]*)"?\s*\.\s*)?"?([a-z_][a-z0-9_]*)"?`;
const READ = new RegExp(String.raw`\b(?:FROM|JOIN)\s+${NAME}`, 'gi');
const WRITE = new RegExp(String.raw`\b(INSERT\s+INTO|UPDATE|DELETE\s+FROM)\s+${NAME}`, 'gi');
/**
 * TypeORM's ways to reach an entity's table: a repository of it, EntityManager.create/save/insert/
 * update/upsert/delete(Entity, ...), the query builder's .update(Entity), .insert().into(Entity),
 * .delete().from(Entity), and forFeature([Entity]).
 */
const ENTITY_USE =
  /\b(?:getRepository|create|save|insert|update|upsert|delete|softDelete|restore|forFeature|insert\(\)\s*\.into|delete\(\)\s*\.from)\(\s*\[?\s*([A-Z][A-Za-z0-9]*)/g;
/** Files directly in src/ belong to no module: any table of a module they write is another module's. */
const ROOT = '(src/)';

/**
 * Edges allowed for some columns only: what a statement's SET assigns there. `${...}` stands for an
 * interpolated assignment, named by the constant it comes from.
 */
const KNOWN_COLUMNS: Record<string, string[]> = {
  // GIVE_BACK (credits/ledger-sql.ts) assigns spent_today.
  'credits -> accounts': ['balance', 'spent_today', 'spent_day', '${GIVE_BACK}'],
};

interface Source {
  path: string;
  text: string;
}

function readSources(files = sourceFiles(SRC)): Source[] {
  return files.map((path) => ({ path, text: readFileSync(path, 'utf8') }));
}

/** A table of the public schema (the only one modules own; pg-boss's schema is pg-boss's), lower case. */
function tableOf(schema: string | undefined, table: string): string | undefined {
  return schema === undefined || schema.toLowerCase() === 'public' ? table.toLowerCase() : undefined;
}

/**
 * The columns an `UPDATE t [alias] SET ...` assigns, from the text right after the table name: the
 * identifiers before `=` at the top level of the SET list (not inside parentheses or `${...}`),
 * and `${NAME}` for an interpolated assignment. '*' when it is not a SET list (INSERT, DELETE).
 */
function assignedColumns(verb: string, rest: string): string[] {
  if (!/^update$/i.test(verb)) return ['*'];
  const set = /^\s*(?:[a-z_][a-z0-9_]*\s+)?SET\b/i.exec(rest);
  if (!set) return ['*'];
  const columns: string[] = [];
  let depth = 0;
  let expectColumn = true;
  for (let i = set[0].length; i < rest.length; i++) {
    const char = rest[i];
    if (char === '$' && rest[i + 1] === '{') {
      if (depth === 0 && expectColumn) {
        const name = /^\$\{\s*([A-Za-z_][A-Za-z0-9_]*)/.exec(rest.slice(i));
        columns.push(`\${${name ? name[1] : '?'}}`);
        expectColumn = false;
      }
      depth++;
      i++;
      continue;
    }
    if (char === '(' ) depth++;
    else if (char === ')' || char === '}') {
      if (depth === 0) break;
      depth--;
    } else if (char === '`') break;
    else if (depth === 0) {
      if (char === ',') expectColumn = true;
      else if (/\s/.test(char)) continue;
      else if (/^(?:WHERE|FROM|RETURNING)\b/i.test(rest.slice(i))) break;
      else if (expectColumn) {
        const column = /^"?([a-z_][a-z0-9_]*)"?\s*=/i.exec(rest.slice(i));
        columns.push(column ? column[1].toLowerCase() : '?');
        expectColumn = false;
      }
    }
  }
  return columns;
}

/** Entity class name → table, from the @Entity('table') declarations. */
function entityTables(sources: Source[]): Map<string, string> {
  const tables = new Map<string, string>();
  for (const { text } of sources) {
    for (const match of text.matchAll(/@Entity\('([a-z_]+)'\)\s*export class (\w+)/g)) tables.set(match[2], match[1]);
  }
  return tables;
}

interface Write {
  table: string;
  columns: string[];
}

/** Every table a source writes, by SQL or through TypeORM, with the columns an UPDATE assigns ('*': all). */
function writesOf(text: string, entities: Map<string, string>): Write[] {
  const writes: Write[] = [];
  for (const match of text.matchAll(WRITE)) {
    const table = tableOf(match[2], match[3]);
    if (table) writes.push({ table, columns: assignedColumns(match[1], text.slice(match.index + match[0].length)) });
  }
  for (const match of text.matchAll(ENTITY_USE)) {
    const table = entities.get(match[1]);
    if (table) writes.push({ table, columns: ['*'] });
  }
  return writes;
}

/**
 * "module -> table" for every write or entity use of another module's table, with where it is; an
 * edge of KNOWN_COLUMNS that writes another column is reported as "module -> table.column".
 */
function crossModuleWrites(sources: Source[] = readSources()): Map<string, string[]> {
  const entities = entityTables(sources);
  const found = new Map<string, string[]>();
  for (const { path, text } of sources) {
    const module = moduleOf(path) ?? ROOT;
    for (const { table, columns } of writesOf(text, entities)) {
      const owner = OWNER[table];
      if (!owner || owner === module) continue;
      const edge = `${module} -> ${table}`;
      const allowed = KNOWN_COLUMNS[edge];
      const keys = allowed ? [edge, ...columns.filter((column) => !allowed.includes(column)).map((column) => `${edge}.${column}`)] : [edge];
      for (const key of keys) found.set(key, [...new Set([...(found.get(key) ?? []), relative(SRC, path)])]);
    }
  }
  return found;
}

/** "module -> table" for every FROM/JOIN of another module's table. */
function crossModuleReads(sources: Source[] = readSources()): Map<string, string[]> {
  const found = new Map<string, string[]>();
  for (const { path, text } of sources) {
    const module = moduleOf(path) ?? ROOT;
    for (const match of text.matchAll(READ)) {
      const table = tableOf(match[1], match[2]);
      const owner = table && OWNER[table];
      if (!owner || owner === module) continue;
      const key = `${module} -> ${table}`;
      found.set(key, [...new Set([...(found.get(key) ?? []), relative(SRC, path)])]);
    }
  }
  return found;
}

/** The writes that break the rule: edges not in KNOWN (a column outside KNOWN_COLUMNS included). */
function unexpectedWrites(writes: Map<string, string[]>): string[] {
  return [...writes.entries()].filter(([edge]) => !KNOWN[edge]).map(([edge, files]) => `${edge} (${files.join(', ')})`);
}

describe('table ownership: each table is written by the module that owns it', () => {
  const sources = readSources();
  const writes = crossModuleWrites(sources);

  it('knows an owner for every table a statement of src/ writes', () => {
    const written = new Set(
      sources.flatMap(({ text }) => [...text.matchAll(WRITE)].map((match) => tableOf(match[2], match[3])).filter((table): table is string => table !== undefined)),
    );
    // SQL words after UPDATE that are not tables (FOR NO KEY UPDATE OF a, FOR UPDATE SKIP LOCKED).
    const notTables = new Set(['of', 'with', 'set', 'skip', 'nowait']);
    expect([...written].filter((table) => !OWNER[table] && !notTables.has(table))).toEqual([]);
  });

  it('finds no write to another module\'s table beyond the known ones', () => {
    expect(unexpectedWrites(writes)).toEqual([]);
  });

  it('lists no known exception that is gone (the list only shrinks)', () => {
    expect(Object.keys(KNOWN).filter((edge) => !writes.has(edge))).toEqual([]);
  });

  it('finds no read of another module\'s table beyond the known ones (ask its module instead)', () => {
    const reads = crossModuleReads(sources);
    expect([...reads.entries()].filter(([edge]) => !KNOWN_READS[edge]).map(([edge, files]) => `${edge} (${files.join(', ')})`)).toEqual([]);
    expect(Object.keys(KNOWN_READS).filter((edge) => !reads.has(edge))).toEqual([]);
  });

  describe('the checker catches a planted violation', () => {
    // The real entity declarations, so that TypeORM forms resolve to their tables.
    const entitySources = sources.filter(({ text }) => text.includes('@Entity('));
    const planted = (folder: string | undefined, text: string): string[] => {
      const path = folder ? join(SRC, folder, 'planted-fixture.ts') : join(SRC, 'planted-fixture.ts');
      return unexpectedWrites(crossModuleWrites([...entitySources, { path, text }]));
    };

    it.each([
      ['a bare table name', 'UPDATE accounts SET disabled = true WHERE id = $1'],
      ['a quoted table name', 'UPDATE "accounts" SET disabled = true WHERE id = $1'],
      ['a schema-qualified name', 'DELETE FROM public.accounts WHERE id = $1'],
      ['a quoted schema-qualified name', 'INSERT INTO "public"."accounts" (name) VALUES ($1)'],
      ['EntityManager.update(Entity, ...)', 'await em.update(Account, { id }, { disabled: true });'],
      ['EntityManager.insert(Entity, ...)', 'await em.insert(Account, { name });'],
      ['EntityManager.delete(Entity, ...)', 'await em.delete(Account, { id });'],
      ['the query builder\'s .update(Entity)', 'await em.createQueryBuilder().update(Account).set({ disabled: true }).execute();'],
      ['the query builder\'s .insert().into(Entity)', 'await em.createQueryBuilder().insert().into(Account).values({ name }).execute();'],
      ['the query builder\'s .delete().from(Entity)', 'await em.createQueryBuilder().delete().from(Account).execute();'],
      ['a repository of the entity', 'await em.getRepository(Account).update({ id }, { disabled: true });'],
    ])('%s, written by bulk/', (_form, text) => {
      expect(planted('bulk', `const sql = \`${text}\`;`)).toEqual(['bulk -> accounts (bulk/planted-fixture.ts)']);
    });

    it('a file directly under src/', () => {
      expect(planted(undefined, 'const sql = `UPDATE accounts SET disabled = true`;')).toEqual([`${ROOT} -> accounts (planted-fixture.ts)`]);
    });

    it('credits writing a column of accounts other than its balance columns', () => {
      expect(planted('credits', 'const sql = `UPDATE accounts a SET balance = a.balance + $2, disabled = (SELECT true FROM x) WHERE a.id = $1`;')).toEqual([
        'credits -> accounts.disabled (credits/planted-fixture.ts)',
      ]);
      expect(planted('credits', 'const sql = `DELETE FROM accounts WHERE id = $1`;')).toEqual(['credits -> accounts.* (credits/planted-fixture.ts)']);
      // Its balance columns, nested expressions and the GIVE_BACK interpolation are allowed.
      expect(
        planted('credits', 'const sql = `UPDATE accounts a SET balance = (SELECT balance FROM account) - $2, spent_today = greatest(a.spent_today, 0), ${GIVE_BACK(\'$2\')} FROM charge WHERE a.id = $1`;'),
      ).toEqual([]);
    });

    it('but not a write of the module\'s own table nor another schema\'s', () => {
      expect(planted('accounts', 'const sql = `UPDATE "public"."accounts" SET disabled = true`; await em.update(Account, { id }, {});')).toEqual([]);
      expect(planted('bulk', 'const sql = `UPDATE pgboss.job SET state = \'cancelled\'`;')).toEqual([]);
    });
  });
});
