import { randomBytes } from 'node:crypto';
import type { DataSource } from 'typeorm';
import { DatabaseError, type PoolClient, type QueryResultRow } from 'pg';
import { poolOf } from './pool';

/**
 * A statement of the request path, run as a named prepared statement on the pool TypeORM opened:
 * PostgreSQL parses and plans its text once per connection instead of on every call (the charge
 * statement's plan cost more of the server's CPU than its rows did), and the call skips TypeORM's
 * query runner. Only for statements outside a transaction, with a fixed text (arrays, not a
 * varying number of placeholders). A failure goes to the data source's logger, as TypeORM's own
 * queries' do (the app's DatabaseLogger: never the parameters), and is rethrown as pg's own error,
 * which `hasSqlState` reads.
 *
 * The connection goes back to the pool after an error of the statement (a lock timeout, a unique
 * violation): only a failure of the connection itself closes it (pool.query would close it after
 * any error, and reconnecting and preparing again is what a struggling database can least afford).
 *
 * Behind a connection pooler in transaction mode, named statements need its support (PgBouncer ≥ 1.21
 * with `max_prepared_statements`); without it they run unnamed (parsed each time, in the same round
 * trip): DATABASE_PREPARED_STATEMENTS, chosen at start-up by chooseStatementMode, and under `auto`
 * switched to unnamed at the first 42P05/26000 (the statement then runs again, unnamed: the Parse or
 * Bind that failed ran nothing). docs/operations.md, "Behind a connection pooler".
 */
export async function preparedQuery<Row extends QueryResultRow>(db: DataSource, name: string, text: string, values: unknown[]): Promise<Row[]> {
  const mode = statementMode(db);
  if (mode.named) {
    try {
      return await queryOnce<Row>(db, name, text, values);
    } catch (error) {
      // Parse (42P05) or Bind (26000) refused: nothing ran, so the statement may run again, unnamed.
      if (!mode.auto || !lostBetweenTransactions(error)) throw error;
      if (mode.named) {
        // Once: the calls in flight that fail the same way meanwhile find it switched already.
        mode.named = false;
        db.logger.log('warn', `Named prepared statements do not survive between transactions here (a pooler in transaction mode, ${(error as { code?: string }).code}): the charge and settle statements run unnamed from now on (DATABASE_PREPARED_STATEMENTS, docs/operations.md)`);
      }
    }
  }
  return queryOnce<Row>(db, undefined, text, values);
}

async function queryOnce<Row extends QueryResultRow>(db: DataSource, name: string | undefined, text: string, values: unknown[]): Promise<Row[]> {
  const pool = poolOf(db);
  // The data source closed (a call still running at shutdown): the same error, and the same 503, as TypeORM's.
  if (!pool || pool.ending) throw new Error('Driver not Connected');
  let client: PoolClient | undefined;
  let failure: unknown;
  // The pool listens for a connection's errors only while it is idle: while the statement runs, a
  // socket reset or a server gone without a word must land here, not crash the process.
  const onConnectionError = (error: Error) => {
    failure ??= error;
  };
  try {
    client = await pool.connect();
    client.on('error', onConnectionError);
    return (await client.query<Row>(name === undefined ? { text, values } : { name, text, values })).rows;
  } catch (error) {
    failure ??= error;
    // Only a broken connection leaves the statement's fate open: an error the server sent about it is its outcome.
    if (client && typeof error === 'object' && error !== null && brokeTheConnection(error)) {
      backends.set(error, (client as { processID?: number | null }).processID ?? undefined);
    }
    db.logger.logQueryError(error as Error, `${name === undefined ? 'unnamed statement' : `prepared statement ${name}`}`);
    throw error;
  } finally {
    client?.removeListener('error', onConnectionError);
    client?.release(failure !== undefined && brokeTheConnection(failure) ? (failure as Error) : undefined);
  }
}

const backends = new WeakMap<object, number | undefined>();

/**
 * The server process (pid, from the connection's BackendKeyData) that was running the statement this
 * error failed: when the connection broke, the statement may still run there and commit, and its fate is
 * known once that process has ended (CreditsRepository.backendRunning). Undefined when the statement had
 * no connection, or when the server answered it with an error (then it ran and failed: nothing is open). Behind a pooler the number is the pooler's, which no server process has: then unknown.
 */
export function backendOf(error: unknown): number | undefined {
  return typeof error === 'object' && error !== null ? backends.get(error) : undefined;
}

/** How a data source runs the request path's statements: named or not, and whether that may still change. */
interface StatementMode {
  named: boolean;
  auto: boolean;
}

const modes = new WeakMap<DataSource, StatementMode>();

function statementMode(db: DataSource): StatementMode {
  let mode = modes.get(db);
  // Until chooseStatementMode is told otherwise: named, as `DATABASE_PREPARED_STATEMENTS=named`.
  if (!mode) modes.set(db, (mode = { named: true, auto: false }));
  return mode;
}

/**
 * DATABASE_PREPARED_STATEMENTS for this data source: `named`, `unnamed`, or `auto` (named, unless
 * `probe` finds they do not survive between transactions; and unnamed from the first 42P05/26000).
 * Returns whether the statements run named.
 */
export async function chooseStatementMode(db: DataSource, setting: 'named' | 'unnamed' | 'auto', probe = namedStatementsSurvive): Promise<boolean> {
  const named = setting === 'named' || (setting === 'auto' && (await probe(db)));
  modes.set(db, { named, auto: setting === 'auto' });
  return named;
}

/**
 * Whether named prepared statements stay usable from one transaction to the next on the pool's
 * connections: the same statement name is prepared and run on two connections held at once, in
 * turn, three times. Directly on PostgreSQL (or a pooler in session mode) each connection is its own
 * session and this always works; behind a pooler in transaction mode without prepared-statement
 * support (PgBouncer < 1.21, or ≥ 1.21 without max_prepared_statements) the two connections share
 * server sessions, so a Parse meets the other connection's statement (42P05) or a run by name lands
 * on a session that never prepared it (26000). The probe's connections are closed after it.
 */
export async function namedStatementsSurvive(db: DataSource): Promise<boolean> {
  const pool = poolOf(db);
  if (!pool) throw new Error('Driver not Connected');
  const name = `phone_filter_probe_${randomBytes(6).toString('hex')}`;
  const clients: PoolClient[] = [];
  try {
    clients.push(await pool.connect(), await pool.connect());
    for (let round = 0; round < 3; round++) {
      for (const client of clients) await client.query({ name, text: 'SELECT 1 AS one', values: [] });
    }
    return true;
  } catch (error) {
    if (lostBetweenTransactions(error)) return false;
    throw error;
  } finally {
    for (const client of clients) client.release(true);
  }
}

/** 42P05 (a Parse met a statement of that name already there) or 26000 (a run by name found none). */
function lostBetweenTransactions(error: unknown): boolean {
  return error instanceof DatabaseError && (error.code === '42P05' || error.code === '26000');
}

/**
 * Whether an error leaves the connection unusable: anything but an error the server sent about the
 * statement (a socket error, a timeout of the client), connection exceptions (class 08), the server
 * shutting down or killing the session (57P0x), and the errors after which pg's idea of what the server
 * has prepared is wrong: 26000 (it does not exist there: a pooler in between, a DISCARD), 42P05 (it
 * exists already: a pooler gave this connection another's session) and 0A000 raised by the plan cache ("cached plan must not change result type": a
 * migration changed a table under it). A new connection prepares the statement again.
 */
export function brokeTheConnection(error: unknown): boolean {
  if (!(error instanceof DatabaseError)) return true;
  const { code = '', routine } = error;
  return /^(08|57P0)/.test(code) || code === '26000' || code === '42P05' || (code === '0A000' && routine === 'RevalidateCachedQuery');
}
