import { join } from 'node:path';
import { DataSource } from 'typeorm';
import { dataSourceOptions } from './data-source-options';

// For `npm run migration:run` / `migration:generate` only: these commands need DATABASE_URL set.
const url = process.env.DATABASE_URL;
if (!url) throw new Error('Set DATABASE_URL for the TypeORM CLI (the service itself starts an embedded Postgres).');
// The entities by file name, so that this file imports no feature (migration:generate compares them with the schema).
export default new DataSource({ ...dataSourceOptions(url), entities: [join(__dirname, '..', '**', '*.entity.{ts,js}')] });
