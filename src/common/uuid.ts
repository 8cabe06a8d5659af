import { ParseUUIDPipe } from '@nestjs/common';

const uuids = new ParseUUIDPipe();

/**
 * Whether an id from a path or a CLI argument is a UUID (any version), by Nest's ParseUUIDPipe: the
 * one rule for ids. A malformed id is answered like an unknown one (404) by the service that asks,
 * before PostgreSQL sees it (it would refuse the cast).
 */
export async function isUuid(value: string): Promise<boolean> {
  return uuids.transform(value, { type: 'param' }).then(
    () => true,
    () => false,
  );
}
