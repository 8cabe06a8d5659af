import { Logger } from '@nestjs/common';
import { Client, type ClientConfig } from 'pg';

const logger = new Logger('Database');

/**
 * The pool's client, with a listener for errors that arrive while it is checked out. pg-pool listens
 * only while a client is idle in the pool; a client held by a transaction between two statements (the
 * Idempotency-Key claim, a bulk submit…) that hears PostgreSQL die (FATAL 57P01, the server killed)
 * emitted an `error` nobody listened to, and Node ended the process: kill -9 of PostgreSQL took an
 * instance down with it. Heard here, the error is logged once; the transaction's next statement fails
 * ("not queryable"), which the exception filter answers 503.
 */
export class GuardedClient extends Client {
  constructor(config?: string | ClientConfig) {
    super(config);
    this.on('error', (error: Error) => logger.warn(`a connection in use lost PostgreSQL: ${error.message}`));
  }
}
