import { DataSourceOptions } from 'typeorm';
import { GuardedClient } from './guarded-client';
import { MIGRATIONS } from '../../migrations';

/**
 * One definition of the connection, shared by Nest, the TypeORM CLI, the admin CLI and the tests.
 * No entities here: each feature module registers its own (TypeOrmModule.forFeature, loaded by
 * `autoLoadEntities`), so the database layer imports no feature.
 */
export function dataSourceOptions(url: string, poolSize = 20, connectTimeoutMs = 5000): DataSourceOptions {
  return {
    type: 'postgres',
    url,
    entities: [],
    migrations: MIGRATIONS,
    migrationsTableName: 'typeorm_migrations',
    synchronize: false,
    logging: ['error', 'warn', 'migration'],
    // keepAlive: a connection whose peer vanished without a word (a NAT or failover dropping it) is found dead
    // by TCP keepalives instead of waiting for the kernel's retransmission timeout.
    // Client: the pool's clients listen for errors while checked out too (guarded-client.ts).
    extra: { max: poolSize, connectionTimeoutMillis: connectTimeoutMs, application_name: 'phone-filter', keepAlive: true, Client: GuardedClient },
  };
}
