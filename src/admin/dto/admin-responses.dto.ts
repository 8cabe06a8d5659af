import { ApiProperty } from '@nestjs/swagger';
import { CheckOptionsDto } from '../../settings/dto/settings.dto';

export class CreatedAccountDto {
  @ApiProperty({ format: 'uuid' }) id: string;
  @ApiProperty({ example: 'Acme Ltd' }) name: string;
  @ApiProperty({ example: 'free' }) plan: string;
  @ApiProperty({ example: 1000 }) balance: number;
  @ApiProperty({ example: 'pf_live_3kTq9ZrW0bXvYc2mN7aP4sLd8fGh1JeK', description: 'Shown once; only its hash is stored.' })
  api_key: string;
}

/**
 * Not ChecksDto: that name is the customer settings' schema, and schema names are global in the document.
 * Every registered check, on or off; its properties in the document come from the CheckRegistry.
 */
export class AccountChecksDto {
  [check: string]: boolean;
}

export class AccountSettingsDto {
  @ApiProperty({ type: AccountChecksDto }) checks: AccountChecksDto;
  @ApiProperty({ type: Number, nullable: true, example: 5000, description: 'Credits per UTC day; null: no cap.' }) daily_credit_limit: number | null;
  @ApiProperty({ type: Number, nullable: true, example: 1000, description: 'balance.low below this; null: no alert.' }) low_balance_threshold: number | null;
  @ApiProperty({ type: String, nullable: true, example: 'https://example.com/hooks/phone-filter' }) webhook_url: string | null;
  @ApiProperty({ type: CheckOptionsDto, description: "Each check's options as they apply to the account (set, or the default)." }) check_options: CheckOptionsDto;
}

export class KeySummaryDto {
  @ApiProperty({ format: 'uuid' }) id: string;
  @ApiProperty({ example: 'pf_live_3kTq' }) prefix: string;
  @ApiProperty({ enum: ['active', 'revoked'] }) status: string;
  @ApiProperty({ format: 'date-time' }) created_at: string;
  @ApiProperty({ format: 'date-time', nullable: true, type: String, description: 'Updated at most once a minute.' })
  last_used_at: string | null;
}

export class AccountDto {
  @ApiProperty({ format: 'uuid' }) id: string;
  @ApiProperty() name: string;
  @ApiProperty({ example: 'free' }) plan: string;
  @ApiProperty({ example: 1000 }) balance: number;
  @ApiProperty() disabled: boolean;
  @ApiProperty({ format: 'date-time' }) created_at: string;
  @ApiProperty({ type: AccountSettingsDto }) settings: AccountSettingsDto;
  @ApiProperty({ type: [KeySummaryDto], description: 'Never the key itself.' }) keys: KeySummaryDto[];
}

export class AdminBalanceDto {
  @ApiProperty({ example: 1500 }) balance: number;
}

export class IssuedKeyDto {
  @ApiProperty({ format: 'uuid' }) id: string;
  @ApiProperty({ example: 'pf_live_3kTq' }) prefix: string;
  @ApiProperty({ example: 'pf_live_3kTq9ZrW0bXvYc2mN7aP4sLd8fGh1JeK', description: 'Shown once; only its hash is stored.' })
  api_key: string;
}

export class RevokedKeyDto {
  @ApiProperty({ format: 'uuid' }) id: string;
  @ApiProperty({ enum: ['revoked'] }) status: 'revoked';
}

export class PlanDto {
  @ApiProperty({ example: 'free' }) name: string;
  @ApiProperty({ example: 5 }) limit: number;
  @ApiProperty({ example: 1 }) window_seconds: number;
  @ApiProperty({ example: 10_000, description: 'Numbers an account may watch across its watchlists.' }) max_watched_numbers: number;
}

export class PlansDto {
  @ApiProperty({ type: [PlanDto] }) plans: PlanDto[];
}

export class AuditEntryDto {
  @ApiProperty({ example: '42' }) id: string;
  @ApiProperty({ example: 'admin-api', description: '`admin-api` (HTTP), `cli:<os user>` (CLI), `bootstrap`...' }) actor: string;
  @ApiProperty({
    example: 'credits.top_up',
    description: 'account.create, account.update, settings.update, credits.top_up, credits.adjust, key.issue, key.revoke, plan.update',
  })
  action: string;
  @ApiProperty({ enum: ['account', 'api_key', 'plan', 'phone'], description: 'phone: an erasure; target_id is then the keyed hash of the number, never the number.' }) target_type: string;
  @ApiProperty() target_id: string;
  @ApiProperty({ type: 'object', nullable: true, additionalProperties: true }) before: Record<string, unknown> | null;
  @ApiProperty({ type: 'object', nullable: true, additionalProperties: true }) after: Record<string, unknown> | null;
  @ApiProperty({ nullable: true, type: String }) request_id: string | null;
  @ApiProperty({ format: 'date-time' }) created_at: string;
}

export class AuditPageDto {
  @ApiProperty({ type: [AuditEntryDto] }) entries: AuditEntryDto[];
  @ApiProperty({ nullable: true, type: String, description: 'Pass as `cursor` for the next (older) page; null on the last.' })
  next_cursor: string | null;
}

export class AccountSummaryDto {
  @ApiProperty({ format: 'uuid' }) id: string;
  @ApiProperty({ example: 'Acme Ltd' }) name: string;
  @ApiProperty({ example: 'standard' }) plan: string;
  @ApiProperty({ example: 1000 }) balance: number;
  @ApiProperty() disabled: boolean;
  @ApiProperty({ format: 'date-time' }) created_at: string;
}

export class AccountPageDto {
  @ApiProperty({ type: [AccountSummaryDto] }) accounts: AccountSummaryDto[];
  @ApiProperty({ nullable: true, type: String, description: 'Pass as `cursor` for the next (older) page; null on the last.' })
  next_cursor: string | null;
}

/** What an erasure changed, store by store (docs/privacy.md). */
export class ErasureDto {
  @ApiProperty({ example: '6f1c…', description: 'The keyed hash of the number (DATA_HASH_KEY), as recorded in the audit trail: the number itself is kept nowhere.' })
  phone_hash: string;
  @ApiProperty({ example: 3, description: 'Ledger rows whose phone was reduced to its masked form (amounts, references and balances untouched).' })
  ledger_entries_masked: number;
  @ApiProperty({ example: 2, description: "Bulk entries, of every account's jobs, reduced to the masked form (one still waiting for its lookup is answered as failed and refunded)." })
  bulk_entries_masked: number;
  @ApiProperty({ example: 1, description: 'Watchlist entries deleted (the number is no longer watched), in every account.' }) watchlist_entries_deleted: number;
  @ApiProperty({ example: 4 }) watchlist_changes_deleted: number;
  @ApiProperty({ example: 0, description: 'Charges of running watchlist rounds that had not checked the number yet, refunded (as when a watchlist is deleted).' })
  watchlist_charges_refunded: number;
  @ApiProperty({ example: 1, description: 'Idempotency-Key rows of the number deleted, or, while their key is alive, stripped of it (a retry gets 409, never a second charge).' })
  idempotency_keys_erased: number;
  @ApiProperty({ example: 1, description: 'Callbacks (the outbox) whose body held the number, deleted, delivered or not (a pending one is never sent).' })
  callback_events_deleted: number;
  @ApiProperty({ example: 3, description: 'Cached answers deleted from Redis or memory; every instance drops its in-process copy too.' })
  lookup_cache_entries_deleted: number;
  @ApiProperty({ example: 1, description: 'Risk verdict feedback rows of the number deleted, in every account (POST /api/v1/risk/feedback).' })
  risk_feedback_deleted: number;
  @ApiProperty({ example: 1, description: "Accounts' records of asking a risk verdict for the number (the counters, Redis or memory), forgotten with the number's keyed hash in every counter." })
  risk_asks_forgotten: number;
}
