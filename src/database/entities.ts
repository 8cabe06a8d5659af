import { Account } from '../accounts/account.entity';
import { Plan } from '../accounts/plan.entity';
import { ApiKey } from '../auth/api-key.entity';
import { LedgerEntry } from '../credits/ledger-entry.entity';
import { AccountSettings } from '../settings/account-settings.entity';

export const ENTITIES = [Plan, Account, ApiKey, AccountSettings, LedgerEntry];
