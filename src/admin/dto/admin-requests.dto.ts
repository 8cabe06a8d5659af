import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Transform, Type } from 'class-transformer';
import { IsBoolean, IsInt, IsOptional, IsString, Matches, Max, MaxLength, Min, NotEquals } from 'class-validator';
import { IsPhone } from '../../common/is-phone.decorator';
import { PageQueryDto } from '../../common/page-query.dto';
import { ADMIN_LIMITS } from '../admin.service';

const NOT_BLANK = /\S/;

export class CreateAccountDto {
  @ApiProperty({ example: 'Acme Ltd', maxLength: ADMIN_LIMITS.nameLength })
  @IsString()
  @Matches(NOT_BLANK, { message: 'name must not be blank' })
  @MaxLength(ADMIN_LIMITS.nameLength)
  name: string;

  @ApiPropertyOptional({ example: 'free', description: 'One of the plans of GET /admin/v1/plans. Default: `free`.' })
  @IsOptional()
  @IsString()
  @MaxLength(32)
  plan?: string;

  @ApiPropertyOptional({ example: 1000, minimum: 0, maximum: ADMIN_LIMITS.credits, description: 'Initial credits (a TOPUP ledger row). Default: 0.' })
  @IsOptional()
  @IsInt()
  @Min(0)
  @Max(ADMIN_LIMITS.credits)
  credits?: number;
}

export class UpdateAccountDto {
  @ApiPropertyOptional({ example: 'standard' })
  @IsOptional()
  @IsString()
  @MaxLength(32)
  plan?: string;

  @ApiPropertyOptional({ example: true, description: 'A disabled account keeps its data; its keys get 401 REVOKED_API_KEY.' })
  @IsOptional()
  @IsBoolean()
  disabled?: boolean;
}

export class ChangeCreditsDto {
  @ApiProperty({
    example: 500,
    description: '> 0: top-up (TOPUP). < 0: adjustment (ADJUSTMENT), refused with 400 if the balance would go below 0.',
    minimum: -ADMIN_LIMITS.credits,
    maximum: ADMIN_LIMITS.credits,
  })
  @IsInt()
  @NotEquals(0, { message: 'amount must not be 0' })
  @Min(-ADMIN_LIMITS.credits)
  @Max(ADMIN_LIMITS.credits)
  amount: number;

  @ApiProperty({ example: 'invoice 2024-117', maxLength: ADMIN_LIMITS.reasonLength, description: 'Stored on the ledger row.' })
  @IsString()
  @Matches(NOT_BLANK, { message: 'reason must not be blank' })
  @MaxLength(ADMIN_LIMITS.reasonLength)
  reason: string;
}

export class UpdatePlanDto {
  @ApiProperty({ example: 50, minimum: 1, maximum: ADMIN_LIMITS.planLimit, description: 'Requests allowed per window.' })
  @IsInt()
  @Min(1)
  @Max(ADMIN_LIMITS.planLimit)
  limit: number;

  @ApiProperty({ example: 1, minimum: 1, maximum: ADMIN_LIMITS.planWindowSeconds })
  @IsInt()
  @Min(1)
  @Max(ADMIN_LIMITS.planWindowSeconds)
  window_seconds: number;

  @ApiPropertyOptional({ example: 10_000, minimum: 0, maximum: ADMIN_LIMITS.planMaxWatchedNumbers, description: 'Numbers an account may watch across its watchlists; unchanged when absent.' })
  @IsOptional()
  @IsInt()
  @Min(0)
  @Max(ADMIN_LIMITS.planMaxWatchedNumbers)
  max_watched_numbers?: number;
}

export class AuditQueryDto extends PageQueryDto({
  defaultLimit: ADMIN_LIMITS.auditPageDefault,
  maxLimit: ADMIN_LIMITS.auditPageMax,
  cursorMaxLength: 200,
  example: 50,
}) {

  @ApiPropertyOptional({ description: 'Only the entries of this account, key or plan.' })
  @IsOptional()
  @IsString()
  @MaxLength(128)
  target_id?: string;
}

export class AccountsQueryDto extends PageQueryDto({ defaultLimit: ADMIN_LIMITS.accountPageDefault, maxLimit: ADMIN_LIMITS.accountPageMax, cursorMaxLength: 100, example: 50 }) {
  @ApiPropertyOptional({ example: 'acme', description: 'Accounts whose name contains this, ignoring case.' })
  @IsOptional()
  @IsString()
  @MaxLength(ADMIN_LIMITS.nameLength)
  name?: string;

  @ApiPropertyOptional({ example: 'standard' })
  @IsOptional()
  @IsString()
  @MaxLength(32)
  plan?: string;

  @ApiPropertyOptional({ type: Boolean, example: false })
  @IsOptional()
  @Transform(({ value }) => (value === 'true' ? true : value === 'false' ? false : value))
  @IsBoolean({ message: 'disabled must be true or false' })
  disabled?: boolean;

  @ApiPropertyOptional({ example: 1000, description: 'Accounts whose balance is below this many credits.' })
  @IsOptional()
  @Type(() => Number)
  @IsInt()
  @Min(0)
  @Max(ADMIN_LIMITS.credits)
  balance_below?: number;
}

export class ErasureRequestDto {
  @ApiProperty({ example: '+44 7400 123456', description: 'The number to erase, in any form /filter accepts (E.164; spaces, "-", ".", "(" and ")" ignored).' })
  @IsString()
  @MaxLength(64)
  @IsPhone()
  phone: string;
}
