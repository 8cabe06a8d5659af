import { explainStartupFailure, StartupContext } from './startup-failure';

/** A Node system error as net, dns and fs raise them. */
function systemError(code: string, fields: Record<string, unknown> = {}, message = `${code} happened`): Error {
  return Object.assign(new Error(message), { code, ...fields });
}

/** An error PostgreSQL answered (pg's DatabaseError carries the SQLSTATE as `code`). */
function postgresError(code: string, message: string): Error {
  return Object.assign(new Error(message), { code, severity: 'FATAL' });
}

const server: StartupContext = { databaseUrl: 'postgres://app:s3cret-pass@db.internal:6543/phone_filter', port: 3000, host: '0.0.0.0' };
const embedded: StartupContext = { port: 3000, host: '0.0.0.0' };

describe('explainStartupFailure: one line that names the fix', () => {
  it.each<[string, unknown, StartupContext, string]>([
    [
      'DATABASE_URL refused (ECONNREFUSED)',
      systemError('ECONNREFUSED', { address: '10.0.0.5', port: 6543, syscall: 'connect' }),
      server,
      'PostgreSQL at db.internal:6543 refused the connection (DATABASE_URL): is PostgreSQL running at db.internal:6543? Or unset DATABASE_URL to use the embedded one.',
    ],
    [
      'refused on localhost, reported by happy eyeballs as an AggregateError',
      Object.assign(new AggregateError([systemError('ECONNREFUSED'), systemError('ECONNREFUSED')], ''), { code: undefined }),
      { databaseUrl: 'postgres://postgres@localhost/x' },
      'PostgreSQL at localhost:5432 refused the connection (DATABASE_URL): is PostgreSQL running at localhost:5432? Or unset DATABASE_URL to use the embedded one.',
    ],
    [
      'an unknown host (ENOTFOUND)',
      systemError('ENOTFOUND', { hostname: 'db.internal', syscall: 'getaddrinfo' }),
      server,
      'The host of DATABASE_URL, db.internal, is not known (DNS): check DATABASE_URL, or unset DATABASE_URL to use the embedded one.',
    ],
    [
      'no answer within the connect timeout',
      new Error('timeout exceeded when trying to connect'),
      server,
      'PostgreSQL at db.internal:6543 does not answer (DATABASE_URL): is it running, and reachable from here (firewall)? Or unset DATABASE_URL to use the embedded one.',
    ],
    [
      'a wrong password (28P01)',
      postgresError('28P01', 'password authentication failed for user "app"'),
      server,
      'PostgreSQL at db.internal:6543 refused user "app": password authentication failed for user "app". Check the user and password in DATABASE_URL, or unset DATABASE_URL to use the embedded one.',
    ],
    [
      'an unknown role (28000)',
      postgresError('28000', 'role "app" does not exist'),
      server,
      'PostgreSQL at db.internal:6543 refused user "app": role "app" does not exist. Check the user and password in DATABASE_URL, or unset DATABASE_URL to use the embedded one.',
    ],
    [
      'no such database (3D000)',
      postgresError('3D000', 'database "phone_filter" does not exist'),
      server,
      'PostgreSQL at db.internal:6543 has no database "phone_filter": create it with npm run db:create (same DATABASE_URL), or unset DATABASE_URL to use the embedded one.',
    ],
    [
      'the port taken (EADDRINUSE)',
      systemError('EADDRINUSE', { syscall: 'listen', port: 3000 }),
      embedded,
      'Port 3000 is already in use on 0.0.0.0 (is Phone Filter already running?): stop that process, or start with PORT=3001.',
    ],
    [
      'a privileged port (EACCES on listen)',
      systemError('EACCES', { syscall: 'listen' }),
      { ...embedded, port: 80 },
      'Port 80 needs privileges this user does not have (ports below 1024 do): start with PORT=3000, say.',
    ],
    [
      'HOST not of this machine (EADDRNOTAVAIL)',
      systemError('EADDRNOTAVAIL', { syscall: 'listen' }),
      { ...embedded, host: '10.9.9.9' },
      'HOST=10.9.9.9 is not an address of this machine: start with HOST=127.0.0.1 (this machine only) or HOST=0.0.0.0 (every interface).',
    ],
    [
      'a read-only checkout, the embedded PostgreSQL\'s data in .data/pg',
      systemError('EACCES', { syscall: 'mkdir', path: '/srv/phone-filter/.data' }),
      embedded,
      'Cannot write /srv/phone-filter/.data: the checkout is not writable by this user (the embedded PostgreSQL keeps its data in .data/pg). Set EMBEDDED_PG_DIR to a folder this user can write, or DATABASE_URL to an existing PostgreSQL server.',
    ],
    [
      'a read-only EMBEDDED_PG_DIR (EROFS)',
      systemError('EROFS', { syscall: 'open', path: '/mnt/ro/pg.password' }),
      { ...embedded, embeddedDir: '/mnt/ro/pg' },
      'Cannot write /mnt/ro/pg.password: EMBEDDED_PG_DIR=/mnt/ro/pg, where the embedded PostgreSQL keeps its data, is not writable by this user. Set EMBEDDED_PG_DIR to a folder this user can write, or DATABASE_URL to an existing PostgreSQL server.',
    ],
    [
      'a read-only checkout with DATABASE_URL: the generated data-hash key',
      systemError('EACCES', { syscall: 'mkdir', path: '.data' }),
      server,
      'Cannot write .data, where the key of the personal-data hashes is kept on first start (.data/data-hash-key): set DATA_HASH_KEY (docs/privacy.md), or start from a folder this user can write.',
    ],
    ['anything else: its own message, and where the stack is', new Error('something odd'), server, 'The service could not start: something odd (LOG_LEVEL=debug prints where)'],
  ])('%s', (_name, error, context, expected) => {
    expect(explainStartupFailure(error, context)).toBe(expected);
  });

  it('never shows the password of DATABASE_URL, whatever the failure', () => {
    const failures = [systemError('ECONNREFUSED'), systemError('ENOTFOUND'), postgresError('28P01', 'password authentication failed for user "app"'), postgresError('3D000', 'x'), new Error('y')];
    for (const failure of failures) expect(explainStartupFailure(failure, server)).not.toContain('s3cret-pass');
  });

  it('at LOG_LEVEL=debug an unknown failure does not send the reader to LOG_LEVEL=debug', () => {
    expect(explainStartupFailure(new Error('something odd'), { ...server, debug: true })).toBe('The service could not start: something odd');
  });
});
