import { DataSource } from 'typeorm';
import { dataSourceOptions } from './data-source-options';

// For `npm run migration:run` / `migration:generate` only: these commands need DATABASE_URL set.
const url = process.env.DATABASE_URL;
if (!url) throw new Error('Set DATABASE_URL for the TypeORM CLI (the service itself starts an embedded Postgres).');
export default new DataSource(dataSourceOptions(url));
