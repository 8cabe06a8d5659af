import { InitialSchema1763800000000 } from './1763800000000-InitialSchema';
import { PaidLookup1763800000001 } from './1763800000001-PaidLookup';
import { AdminAudit1763800000002 } from './1763800000002-AdminAudit';
import { BulkJobs1763800000003 } from './1763800000003-BulkJobs';
import { IdempotentCharges1764100000000 } from './1764100000000-IdempotentCharges';
import { BulkChunkLeases1764200000000 } from './1764200000000-BulkChunkLeases';
import { WebhookSecretRotation1764300000000 } from './1764300000000-WebhookSecretRotation';
import { Watchlists1764500000000 } from './1764500000000-Watchlists';

/** Every migration, in order. Listed by class (not a glob) so the same list works from ts and from dist. */
export const MIGRATIONS = [
  InitialSchema1763800000000,
  PaidLookup1763800000001,
  AdminAudit1763800000002,
  BulkJobs1763800000003,
  IdempotentCharges1764100000000,
  BulkChunkLeases1764200000000,
  WebhookSecretRotation1764300000000,
  Watchlists1764500000000,
];
