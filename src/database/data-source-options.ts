import { DataSourceOptions } from 'typeorm';
import { MIGRATIONS } from '../../migrations';
import { ENTITIES } from './entities';

/** One definition of the connection, shared by Nest, the TypeORM CLI, the admin CLI and the tests. */
export function dataSourceOptions(url: string, poolSize = 20): DataSourceOptions {
  return {
    type: 'postgres',
    url,
    entities: ENTITIES,
    migrations: MIGRATIONS,
    migrationsTableName: 'typeorm_migrations',
    synchronize: false,
    logging: ['error', 'warn', 'migration'],
    extra: { max: poolSize, connectionTimeoutMillis: 5000, application_name: 'phone-filter' },
  };
}
