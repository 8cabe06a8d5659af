import { InitialSchema1763800000000 } from './1763800000000-InitialSchema';
import { PaidLookup1763800000001 } from './1763800000001-PaidLookup';
import { AdminAudit1763800000002 } from './1763800000002-AdminAudit';
import { BulkJobs1763800000003 } from './1763800000003-BulkJobs';
import { IdempotentCharges1764100000000 } from './1764100000000-IdempotentCharges';
import { ChargeAttempts1764100000100 } from './1764100000100-ChargeAttempts';
import { BulkChunkLeases1764200000000 } from './1764200000000-BulkChunkLeases';
import { WebhookSecretRotation1764300000000 } from './1764300000000-WebhookSecretRotation';
import { CustomerControls1764400000000 } from './1764400000000-CustomerControls';
import { DailySpendingCap1764400000001 } from './1764400000001-DailySpendingCap';
import { BackfillSpentToday1764400000100 } from './1764400000100-BackfillSpentToday';
import { Watchlists1764500000000 } from './1764500000000-Watchlists';
import { WatchlistLeaseOwners1764500000100 } from './1764500000100-WatchlistLeaseOwners';
import { WatchlistSpendingLimitPause1764500000200 } from './1764500000200-WatchlistSpendingLimitPause';
import { EnabledChecksAsData1764600000000 } from './1764600000000-EnabledChecksAsData';
import { WatchedFieldsAsData1764600000001 } from './1764600000001-WatchedFieldsAsData';
import { OneCallbackOutbox1764600000300 } from './1764600000300-OneCallbackOutbox';
import { PersonalDataRetention1764700000000 } from './1764700000000-PersonalDataRetention';
import { CountsKeptAndLeanerIndexes1764800000000 } from './1764800000000-CountsKeptAndLeanerIndexes';
import { IdempotencyAnswerContext1764900000000 } from './1764900000000-IdempotencyAnswerContext';
import { AnswerProvenance1765000000000 } from './1765000000000-AnswerProvenance';
import { BulkCsvLayoutPerJob1765100000000 } from './1765100000000-BulkCsvLayoutPerJob';
import { WatchlistEntriesPageIndex1765150000000 } from './1765150000000-WatchlistEntriesPageIndex';
import { RiskVerdicts1765500000000 } from './1765500000000-RiskVerdicts';
import { ErasureByKeyedHash1765600000000 } from './1765600000000-ErasureByKeyedHash';
import { CheckOptions1765700000000 } from './1765700000000-CheckOptions';
import { NumberErasureTombstones1795885078578 } from './1795885078578-NumberErasureTombstones';
import { BulkRiskVerdicts1795885108994 } from './1795885108994-BulkRiskVerdicts';

/** Every migration, in order. Listed by class (not a glob) so the same list works from ts and from dist. */
export const MIGRATIONS = [
  InitialSchema1763800000000,
  PaidLookup1763800000001,
  AdminAudit1763800000002,
  BulkJobs1763800000003,
  IdempotentCharges1764100000000,
  ChargeAttempts1764100000100,
  BulkChunkLeases1764200000000,
  WebhookSecretRotation1764300000000,
  CustomerControls1764400000000,
  DailySpendingCap1764400000001,
  BackfillSpentToday1764400000100,
  Watchlists1764500000000,
  WatchlistLeaseOwners1764500000100,
  WatchlistSpendingLimitPause1764500000200,
  EnabledChecksAsData1764600000000,
  WatchedFieldsAsData1764600000001,
  OneCallbackOutbox1764600000300,
  PersonalDataRetention1764700000000,
  CountsKeptAndLeanerIndexes1764800000000,
  IdempotencyAnswerContext1764900000000,
  AnswerProvenance1765000000000,
  BulkCsvLayoutPerJob1765100000000,
  WatchlistEntriesPageIndex1765150000000,
  RiskVerdicts1765500000000,
  ErasureByKeyedHash1765600000000,
  CheckOptions1765700000000,
  NumberErasureTombstones1795885078578,
  BulkRiskVerdicts1795885108994,
];
