import { TestEnvironment } from 'jest-environment-node';
import { randomBytes } from 'node:crypto';
import { createOwnDatabase, OwnDatabase } from './helpers/own-database';

/**
 * The e2e tier's environment: each test file gets a database of its own (a copy of the run's migrated
 * template) and Redis key prefixes of its own, through its own copy of process.env, before the file is
 * loaded. Files share nothing they write, so jest may run them side by side; the services a file
 * starts (in-process or as child processes) inherit both. An app that wants its own prefixes still
 * sets them (test/helpers/test-app.ts).
 */
export default class E2eEnvironment extends TestEnvironment {
  private database: OwnDatabase | undefined;

  override async setup(): Promise<void> {
    await super.setup();
    const env = this.global.process.env;
    this.database = await createOwnDatabase(env.DATABASE_URL!, env.TEST_TEMPLATE_DATABASE, 'e');
    const isolation = `pf:test:${randomBytes(6).toString('hex')}:`;
    env.DATABASE_URL = this.database.url;
    env.RATE_LIMIT_REDIS_PREFIX = `${isolation}rl:`;
    env.CACHE_KEY_PREFIX = `${isolation}lookup:`;
  }

  override async teardown(): Promise<void> {
    await this.database?.drop();
    await super.teardown();
  }
}
