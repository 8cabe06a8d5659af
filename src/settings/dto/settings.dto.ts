import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { IsBoolean, IsInt, IsObject, IsOptional, IsString, IsUrl, Max, MaxLength, Min, ValidateNested } from 'class-validator';

/** Largest credit amount a cap or threshold may name (the admin API's credit limit). */
export const MAX_CREDIT_SETTING = 1_000_000_000_000;

export class ChecksDto {
  @ApiProperty({ example: true, description: 'Network Connection Status (status, carrier). Default on; 4 credits by default.' })
  network_status: boolean;

  @ApiProperty({ example: false, description: 'Phone Number Type (line_type). Default off; 1 credit by default.' })
  line_type: boolean;

  @ApiProperty({ example: false, description: 'Portability Status (is_ported, carrier). Default off; 2 credits by default.' })
  portability: boolean;
}

export class SettingsDto {
  @ApiProperty({ type: ChecksDto })
  checks: ChecksDto;

  @ApiProperty({ example: 4, minimum: 0, description: "Credits one POST /api/v1/filter costs with these checks: the sum of their prices (this deployment's)." })
  cost_per_call: number;

  @ApiProperty({
    example: 'whsec_9fQ2xL7mB4vT1cN8rZ3kW6yH0dJ5sPaE',
    description: 'HMAC key that signs bulk-job callbacks and account events (X-Signature). Rotate it with POST /api/v1/settings/webhook-secret.',
  })
  webhook_secret: string;

  @ApiProperty({
    type: Number,
    nullable: true,
    example: 5000,
    description:
      'Most credits charged per UTC day (calls and bulk reservations; refunds give allowance back); null: no cap. A call ' +
      'or job that would pass it gets 402 SPENDING_LIMIT_REACHED and is charged nothing.',
  })
  daily_credit_limit: number | null;

  @ApiProperty({
    type: Number,
    nullable: true,
    example: 1000,
    description: 'When a charge takes the balance from at or above this to below it, one `balance.low` event is sent to webhook_url; null: none.',
  })
  low_balance_threshold: number | null;

  @ApiProperty({
    type: String,
    nullable: true,
    example: 'https://example.com/hooks/phone-filter',
    description: 'Where account events are POSTed, signed like bulk callbacks (balance.low; bulk.completed for jobs without callback_url); null: nowhere.',
  })
  webhook_url: string | null;
}

export class WebhookSecretRotationDto {
  @ApiProperty({ example: 'whsec_Q3v8Zk1pN6tY0bRm4LxW9cJ2hF7dS5aG', description: 'The new HMAC key; callbacks are signed with it from now on.' })
  webhook_secret: string;

  @ApiProperty({
    example: '2026-11-24T05:00:00.000Z',
    format: 'date-time',
    description: 'Until then the previous secret still signs callbacks too: X-Signature carries both signatures, comma-separated, the new one first.',
  })
  previous_secret_valid_until: string;
}

export class ChecksPatchDto {
  @ApiPropertyOptional({ example: true, description: 'Network Connection Status (status, carrier); 4 credits by default.' })
  @IsOptional() @IsBoolean()
  network_status?: boolean;

  @ApiPropertyOptional({ example: true, description: 'Phone Number Type (line_type); 1 credit by default.' })
  @IsOptional() @IsBoolean()
  line_type?: boolean;

  @ApiPropertyOptional({ example: false, description: 'Portability Status (is_ported, carrier); 2 credits by default.' })
  @IsOptional() @IsBoolean()
  portability?: boolean;
}

/** The account's spending and alert controls; null clears one. Shared by PATCH /api/v1/settings and the admin API. */
export class AccountControlsPatchDto {
  @ApiPropertyOptional({ type: Number, nullable: true, minimum: 0, maximum: MAX_CREDIT_SETTING, example: 5000, description: 'Credits per UTC day; null removes the cap.' })
  @IsOptional() @IsInt() @Min(0) @Max(MAX_CREDIT_SETTING)
  daily_credit_limit?: number | null;

  @ApiPropertyOptional({ type: Number, nullable: true, minimum: 0, maximum: MAX_CREDIT_SETTING, example: 1000, description: 'Credits; null turns the alert off.' })
  @IsOptional() @IsInt() @Min(0) @Max(MAX_CREDIT_SETTING)
  low_balance_threshold?: number | null;

  @ApiPropertyOptional({
    type: String,
    nullable: true,
    example: 'https://example.com/hooks/phone-filter',
    description: 'An http(s) URL at a public address (the rule of callback_url); null removes it.',
  })
  @IsOptional() @IsString() @MaxLength(2048)
  @IsUrl({ protocols: ['http', 'https'], require_protocol: true, require_tld: false }, { message: 'webhook_url must be an http or https URL' })
  webhook_url?: string | null;
}

export class UpdateSettingsDto extends AccountControlsPatchDto {
  @ApiPropertyOptional({ type: ChecksPatchDto, description: 'Any subset of the three checks.', example: { line_type: true } })
  @IsOptional() @IsObject() @ValidateNested() @Type(() => ChecksPatchDto)
  checks?: ChecksPatchDto;
}
