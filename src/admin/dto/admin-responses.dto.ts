import { ApiProperty } from '@nestjs/swagger';

export class CreatedAccountDto {
  @ApiProperty({ format: 'uuid' }) id: string;
  @ApiProperty({ example: 'Acme Ltd' }) name: string;
  @ApiProperty({ example: 'free' }) plan: string;
  @ApiProperty({ example: 1000 }) balance: number;
  @ApiProperty({ example: 'pf_live_3kTq9ZrW0bXvYc2mN7aP4sLd8fGh1JeK', description: 'Shown once; only its hash is stored.' })
  api_key: string;
}

/** Not ChecksDto: that name is the customer settings' schema, and schema names are global in the document. */
export class AccountChecksDto {
  @ApiProperty() network_status: boolean;
  @ApiProperty() line_type: boolean;
  @ApiProperty() portability: boolean;
}

export class AccountSettingsDto {
  @ApiProperty({ type: AccountChecksDto }) checks: AccountChecksDto;
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
  @ApiProperty({ example: 'credits.top_up', description: 'account.create, account.update, credits.top_up, credits.adjust, key.issue, key.revoke, plan.update' })
  action: string;
  @ApiProperty({ enum: ['account', 'api_key', 'plan'] }) target_type: string;
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
