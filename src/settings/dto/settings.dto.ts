import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsInt, IsObject, IsOptional, IsString, IsUrl, Max, MaxLength, Min, ValidateBy } from 'class-validator';
import { BUILT_IN_CHECKS } from '../../checks/built-in-checks';
import { checkOptionsChangeProblems } from '../../checks/check-options';
import { closestField, OptionalNotNull } from '../../common/validation';
import { knownCheckNames, knownOptionChecks, MAX_CREDIT_SETTING } from '../known-checks';
import { RISK_THRESHOLDS, riskChangeProblems, type RiskThresholdName } from '../risk-settings';

/** A patch example: the first check that is off by default, turned on. */
const EXAMPLE_PATCH = Object.fromEntries(BUILT_IN_CHECKS.filter((check) => !check.defaultEnabled).slice(0, 1).map((check) => [check.name, true]));

/**
 * Every registered check, on or off. Its properties in the OpenAPI document come from the CheckRegistry
 * (src/checks/checks-openapi.ts): one per check, with its price.
 */
export class ChecksDto {
  [check: string]: boolean;
}

/** Every threshold of the risk verdict, as it applies to the account (set, or the default). */
export class RiskThresholdsDto {
  [name: string]: number;
}
// One property per threshold, from its definition (src/settings/risk-settings.ts).
for (const threshold of RISK_THRESHOLDS) {
  ApiProperty({ type: 'integer', format: 'int32', example: threshold.default, minimum: threshold.min, maximum: threshold.max, description: `${threshold.description} Default ${threshold.default}.` })(
    RiskThresholdsDto.prototype,
    threshold.name,
  );
}

export class RiskSettingsDto {
  @ApiProperty({ type: RiskThresholdsDto })
  thresholds: Record<RiskThresholdName, number>;

  @ApiProperty({
    type: 'object',
    additionalProperties: { type: 'integer', format: 'int32', minimum: 0, maximum: 100 },
    example: { CU: 0, '+88213': 100 },
    description:
      "The account's adjustments of the deployment's destination risk table, by country (ISO 3166-1 alpha-2) or E.164 prefix: risk 0-100 (0: never a risk). docs/sms-pumping.md.",
  })
  destinations: Record<string, number>;
}

/** A change of the risk settings: any thresholds and destination entries; null goes back to the default. */
export class RiskSettingsPatchDto {
  @ApiPropertyOptional({
    type: 'object',
    additionalProperties: { type: 'integer', format: 'int32', minimum: 0, maximum: 1_000_000, nullable: true },
    example: { block_score: 80, range_velocity_hour: 6 },
    description: 'Thresholds by name (see RiskThresholdsDto for each one\'s bounds); null goes back to the default.',
  })
  thresholds?: Record<string, number | null>;

  @ApiPropertyOptional({
    type: 'object',
    additionalProperties: { type: 'integer', format: 'int32', minimum: 0, maximum: 100, nullable: true },
    example: { CU: 0, '+88213': 100, '+4470': null },
    description: 'Risk 0-100 by country (ISO 3166-1 alpha-2) or E.164 prefix; null removes the adjustment.',
  })
  destinations?: Record<string, number | null>;
}

/** `risk` of a settings change: known thresholds within their bounds, destination keys and risks 0-100, each or null. */
function IsRiskChange(): PropertyDecorator {
  return ValidateBy({
    name: 'isRiskChange',
    validator: {
      validate: (value) => riskChangeProblems(value).length === 0,
      defaultMessage: (args) => riskChangeProblems(args?.value).join('; '),
    },
  });
}

/**
 * Every option of every check that declares options, as it applies to the account (set, or the
 * default), by check then option. Its properties in the OpenAPI document come from the CheckRegistry
 * (src/checks/checks-openapi.ts).
 */
export class CheckOptionsDto {
  [check: string]: Record<string, number>;
}

/** A change of check options: any options of any checks; null goes back to the default. Documented from the registry. */
export class CheckOptionsPatchDto {
  [check: string]: Record<string, number | null>;
}

/** `check_options` names known checks and their declared options, each an integer within its bounds or null. */
function IsCheckOptionsChange(): PropertyDecorator {
  return ValidateBy({
    name: 'isCheckOptionsChange',
    validator: {
      validate: (value) => checkOptionsChangeProblems(knownOptionChecks, value).length === 0,
      defaultMessage: (args) => checkOptionsChangeProblems(knownOptionChecks, args?.value).join('; '),
    },
  });
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

  @ApiProperty({ type: RiskSettingsDto, description: 'The risk verdict\'s tuning (POST /api/v1/risk): its thresholds and destination adjustments. docs/sms-pumping.md.' })
  risk: RiskSettingsDto;

  @ApiProperty({
    type: CheckOptionsDto,
    description: "Each check's options as they apply to the account (set, or the default), by check: the SIM swap check's window (docs/api.md \"SIM swap\").",
  })
  check_options: CheckOptionsDto;
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

/** What is wrong with a `checks` object, one sentence per key (none for a value that is not an object: IsObject says so). */
function checkSwitchProblems(value: unknown): string[] {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return [];
  return Object.entries(value).flatMap(([name, on]) => {
    if (!knownCheckNames.has(name)) {
      const meant = closestField(name, [...knownCheckNames]);
      return [`unknown field "checks.${name}"${meant ? `: did you mean "${meant}"?` : ''}`];
    }
    if (on === null) return [`checks.${name} must not be null (leave it out to keep its value)`];
    return typeof on === 'boolean' ? [] : [`checks.${name} must be a boolean value`];
  });
}

/** `checks` names known checks only, each true or false (never null). */
function IsCheckSwitches(): PropertyDecorator {
  return ValidateBy({
    name: 'isCheckSwitches',
    validator: {
      validate: (value) => checkSwitchProblems(value).length === 0,
      defaultMessage: (args) => checkSwitchProblems(args?.value).join('; '),
    },
  });
}

/** Any subset of the registered checks, each true or false (checked again by SettingsService; documented from the registry). */
export class ChecksPatchDto {
  [check: string]: boolean;

  /** For the validation messages' "it belongs under checks" (src/common/validation.ts). */
  static knownFields(): readonly string[] {
    return [...knownCheckNames];
  }
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

  @ApiPropertyOptional({
    type: CheckOptionsPatchDto,
    description: "Options of checks, by check then option (each one's bounds: CheckOptionsDto); null goes back to the default. Unknown options or values out of bounds: 400 naming them.",
    example: { sim_swap: { window_hours: 72 } },
  })
  @OptionalNotNull() @IsObject() @IsCheckOptionsChange()
  check_options?: CheckOptionsPatchDto;
}

export class UpdateSettingsDto extends AccountControlsPatchDto {
  @ApiPropertyOptional({ type: ChecksPatchDto, description: 'Any subset of the checks.', example: EXAMPLE_PATCH })
  @OptionalNotNull() @IsObject() @IsCheckSwitches()
  checks?: ChecksPatchDto;

  @ApiPropertyOptional({
    type: RiskSettingsPatchDto,
    description: 'Thresholds of the risk verdict and adjustments of the destination table; null goes back to the default. docs/sms-pumping.md.',
    example: { thresholds: { block_score: 80 }, destinations: { CU: 0 } },
  })
  @OptionalNotNull() @IsObject() @IsRiskChange()
  risk?: RiskSettingsPatchDto;
}
