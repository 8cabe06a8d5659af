const UNIQUE_VIOLATION = '23505';

/** Whether a query failed on a unique constraint (the one named, when given), from TypeORM's or pg's error. */
export function isUniqueViolation(error: unknown, constraint?: string): boolean {
  const failure = error as { code?: string; constraint?: string; driverError?: { code?: string; constraint?: string } };
  const driver = failure.driverError ?? failure;
  return driver.code === UNIQUE_VIOLATION && (constraint === undefined || driver.constraint === constraint);
}
