import { hostname } from 'node:os';
import { basename } from 'node:path';

/** What start-up knew when it failed: the explanation names the setting to change. */
export interface StartupContext {
  /** DATABASE_URL when set: its host, port, user and database are named, never its password. */
  databaseUrl?: string;
  /** EMBEDDED_PG_DIR when set. */
  embeddedDir?: string;
  port?: number;
  host?: string;
  /** LOG_LEVEL=debug: the stack follows the explanation. */
  debug?: boolean;
  /** LOG_FORMAT, once known; before that (a configuration mistake), JSON unless on a terminal. */
  format?: 'json' | 'pretty';
}

interface SystemError {
  code?: string;
  syscall?: string;
  path?: string;
  message?: string;
  errors?: SystemError[];
}

const NOT_WRITABLE = new Set(['EACCES', 'EROFS', 'EPERM']);
const NO_ANSWER = new Set(['ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH']);
const UNKNOWN_HOST = new Set(['ENOTFOUND', 'EAI_AGAIN', 'EAI_NONAME']);

/** The way out every database message offers: the zero-setup path. */
const EMBEDDED_WAY_OUT = 'unset DATABASE_URL to use the embedded one';

/**
 * One line (a configuration's list of problems aside) for a start-up that failed, saying what was
 * wrong and what to change; a mistake it does not know gets the error's own message. Never a
 * password, never a stack (main.ts adds the stack at LOG_LEVEL=debug).
 */
export function explainStartupFailure(error: unknown, context: StartupContext): string {
  return knownStartupMistake(error, context) ?? `The service could not start: ${messageOf(error)}${context.debug ? '' : ' (LOG_LEVEL=debug prints where)'}`;
}

/** The explanation of a mistake this file knows (the database, the port, a folder not writable), else undefined. */
export function knownStartupMistake(error: unknown, context: StartupContext): string | undefined {
  const failure = (error ?? {}) as SystemError;
  // Node's "happy eyeballs" (localhost: ::1 then 127.0.0.1) reports refusals as an AggregateError.
  const code = failure.code ?? failure.errors?.[0]?.code;
  if (failure.syscall === 'listen' || code === 'EADDRINUSE') return listenFailure(code, context);
  if (code && NOT_WRITABLE.has(code) && failure.path) return notWritable(failure.path, context);
  return context.databaseUrl ? databaseFailure(code, messageOf(error), context.databaseUrl) : undefined;
}

function messageOf(error: unknown): string {
  const failure = (error ?? {}) as SystemError;
  return failure.message || failure.errors?.[0]?.message || String(error);
}

function listenFailure(code: string | undefined, { port, host }: StartupContext): string | undefined {
  if (code === 'EADDRINUSE') {
    return `Port ${port} is already in use on ${host} (is Phone Filter already running?): stop that process, or start with PORT=${(port ?? 3000) + 1}.`;
  }
  if (code === 'EACCES') return `Port ${port} needs privileges this user does not have (ports below 1024 do): start with PORT=3000, say.`;
  if (code === 'EADDRNOTAVAIL') return `HOST=${host} is not an address of this machine: start with HOST=127.0.0.1 (this machine only) or HOST=0.0.0.0 (every interface).`;
  return undefined;
}

function notWritable(path: string, { embeddedDir, databaseUrl }: StartupContext): string {
  // With DATABASE_URL, the one file start-up writes is the generated data-hash key (.data/data-hash-key).
  if (databaseUrl || basename(path).startsWith('data-hash-key')) {
    return `Cannot write ${path}, where the key of the personal-data hashes is kept on first start (.data/data-hash-key): set DATA_HASH_KEY (docs/privacy.md), or start from a folder this user can write.`;
  }
  const where = embeddedDir
    ? `EMBEDDED_PG_DIR=${embeddedDir}, where the embedded PostgreSQL keeps its data, is not writable by this user`
    : 'the checkout is not writable by this user (the embedded PostgreSQL keeps its data in .data/pg)';
  return `Cannot write ${path}: ${where}. Set EMBEDDED_PG_DIR to a folder this user can write, or DATABASE_URL to an existing PostgreSQL server.`;
}

/** The parts of DATABASE_URL a message may show. */
function describe(databaseUrl: string): { server: string; user: string; database: string } {
  try {
    const url = new URL(databaseUrl);
    return {
      server: `${url.hostname}:${url.port || '5432'}`,
      user: decodeURIComponent(url.username) || 'postgres',
      database: decodeURIComponent(url.pathname.slice(1)) || decodeURIComponent(url.username) || 'postgres',
    };
  } catch {
    return { server: '(DATABASE_URL)', user: '?', database: '?' };
  }
}

function databaseFailure(code: string | undefined, message: string, databaseUrl: string): string | undefined {
  const { server, user, database } = describe(databaseUrl);
  const host = server.replace(/:\d+$/, '');
  if (code === 'ECONNREFUSED') return `PostgreSQL at ${server} refused the connection (DATABASE_URL): is PostgreSQL running at ${server}? Or ${EMBEDDED_WAY_OUT}.`;
  if (code && UNKNOWN_HOST.has(code)) return `The host of DATABASE_URL, ${host}, is not known (DNS): check DATABASE_URL, or ${EMBEDDED_WAY_OUT}.`;
  if ((code && NO_ANSWER.has(code)) || /connection timeout|timeout exceeded when trying to connect|timeout expired/i.test(message)) {
    return `PostgreSQL at ${server} does not answer (DATABASE_URL): is it running, and reachable from here (firewall)? Or ${EMBEDDED_WAY_OUT}.`;
  }
  // PostgreSQL's own refusals (SQLSTATE): a bad password, an unknown role or no pg_hba.conf entry, no such database.
  if (code === '28P01' || code === '28000') {
    return `PostgreSQL at ${server} refused user "${user}": ${message}. Check the user and password in DATABASE_URL, or ${EMBEDDED_WAY_OUT}.`;
  }
  if (code === '3D000') return `PostgreSQL at ${server} has no database "${database}": create it with npm run db:create (same DATABASE_URL), or ${EMBEDDED_WAY_OUT}.`;
  return undefined;
}

/**
 * Writes the explanation as the logs are written: one JSON line on stdout like the log lines around it
 * (LOG_FORMAT=json, or output that is not a terminal), else the plain text on stderr. The stack only at
 * LOG_LEVEL=debug.
 */
export function reportStartupFailure(explanation: string, error: unknown, context: StartupContext, now = new Date()): void {
  const stack = context.debug && error instanceof Error ? error.stack : undefined;
  const format = context.format ?? (process.stdout.isTTY ? 'pretty' : 'json');
  if (format === 'json') {
    const line = { level: 'fatal', time: now.toISOString(), pid: process.pid, hostname: hostname(), context: 'Bootstrap', msg: explanation, ...(stack ? { stack } : {}) };
    process.stdout.write(`${JSON.stringify(line)}\n`);
  } else {
    process.stderr.write(`\n${explanation}\n${stack ? `${stack}\n` : ''}\n`);
  }
}
