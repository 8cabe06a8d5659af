/** TypeORM answers an UPDATE/DELETE with [rows, count] and anything else with the rows. */
export function asRows(result: unknown): unknown[] {
  if (Array.isArray(result) && result.length === 2 && Array.isArray(result[0]) && typeof result[1] === 'number') return result[0];
  return Array.isArray(result) ? result : [];
}
