import { ValueTransformer } from 'typeorm';

/** Postgres bigint arrives as a string; credits are well inside Number.MAX_SAFE_INTEGER. */
export const bigintToNumber: ValueTransformer = {
  to: (value: number | null | undefined) => value,
  from: (value: string | null) => (value === null ? null : Number(value)),
};
