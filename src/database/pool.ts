import type { Pool } from 'pg';
import type { DataSource } from 'typeorm';

/**
 * The `pg` pool behind a TypeORM data source (its driver's `master`), for the few places that work
 * below TypeORM: prepared statements, fresh connections and the reachability check. Undefined before
 * the data source connects.
 */
export function poolOf(db: DataSource): (Pool & { options: Record<string, unknown> }) | undefined {
  return (db.driver as unknown as { master?: Pool & { options: Record<string, unknown> } }).master;
}
