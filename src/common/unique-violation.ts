const UNIQUE_VIOLATION = '23505';

/** Whether a query failed on a unique constraint (the one named, when given), from TypeORM's or pg's error. */
export function isUniqueViolation(error: unknown, constraint?: string): boolean {
  return hasSqlState(error, UNIQUE_VIOLATION) && (constraint === undefined || driverError(error).constraint === constraint);
}

/** Whether a query failed with this SQLSTATE (e.g. 55P03, a lock not obtained within lock_timeout). */
export function hasSqlState(error: unknown, code: string): boolean {
  return driverError(error).code === code;
}

function driverError(error: unknown): { code?: string; constraint?: string } {
  const failure = error as { code?: string; constraint?: string; driverError?: { code?: string; constraint?: string } };
  return failure.driverError ?? failure;
}
