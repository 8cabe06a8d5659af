import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsBoolean, IsDefined, IsIn, IsIP, IsOptional, IsString, Matches, MaxLength } from 'class-validator';
import { IsPhone } from '../../common/is-phone.decorator';
import { SOURCE_MESSAGE, SOURCE_PATTERN } from '../../common/source';
import { REASON_CODE_LIST, type ReasonCode } from '../reasons';
import { RECOMMENDATIONS, RISK_EVENTS, RISK_LEVELS, type Recommendation, type RiskEvent, type RiskLevel } from '../scoring';

export class RiskRequestDto {
  @ApiProperty({ example: '+447400123456', description: 'The number a code is about to be sent to. E.164; spaces, "-", ".", "(" and ")" are ignored.' })
  @IsDefined({ message: 'phone is required' })
  @IsString()
  @MaxLength(64)
  @IsPhone()
  phone: string;

  @ApiPropertyOptional({
    example: 'signup-form',
    description:
      'Where the number came from (a form, an app, a partner): velocity is counted per source, so flows stay apart; recorded on the ledger entry. Default: `internal`.',
  })
  @IsOptional()
  @IsString()
  @Matches(SOURCE_PATTERN, { message: SOURCE_MESSAGE })
  source?: string;

  @ApiPropertyOptional({
    enum: RISK_EVENTS,
    example: 'signup',
    description: 'What the code is for. A recent SIM swap weighs most for `login` and `otp` (account recovery, a second factor). Default: `signup`.',
  })
  @IsOptional()
  @IsIn(RISK_EVENTS, { message: `event must be one of ${RISK_EVENTS.join(', ')}` })
  event?: RiskEvent;

  @ApiPropertyOptional({
    example: '203.0.113.7',
    description: "The end user's IP address (not your server's), IPv4 or IPv6: counts numbers and countries asked from one address (an IPv6 address counts by its /64). Kept only as a keyed hash.",
  })
  @IsOptional()
  @IsString()
  @MaxLength(64)
  @IsIP(undefined, { message: 'ip must be an IPv4 or IPv6 address' })
  ip?: string;
}

export class RiskReasonDto {
  @ApiProperty({ enum: REASON_CODE_LIST, example: 'RANGE_VELOCITY', description: 'Stable code (docs/sms-pumping.md "What each reason means").' })
  code: ReasonCode;

  @ApiProperty({ example: 'Asked for 5 distinct numbers of the range +44740012… from this source within an hour (threshold 4): pumping walks through number ranges.' })
  message: string;
}

export class RiskVerdictDto {
  @ApiProperty({ example: 62, minimum: 0, maximum: 100, description: 'The risk, 0 (none seen) to 100.' })
  score: number;

  @ApiProperty({ enum: RISK_LEVELS, example: 'medium', description: 'low under flag_score, medium from flag_score, high from block_score (settings `risk.thresholds`).' })
  level: RiskLevel;

  @ApiProperty({ enum: RECOMMENDATIONS, example: 'flag', description: '`allow` (low), `flag` (medium: add friction, e.g. a CAPTCHA, or review), `block` (high: send no code).' })
  recommendation: Recommendation;

  @ApiProperty({ type: [RiskReasonDto], description: 'Why, strongest first; empty when nothing was found.' })
  reasons: RiskReasonDto[];
}

export class RiskFeedbackDto {
  @ApiProperty({ example: '+447400123456', description: 'The number of an earlier verdict of this account (within 24 h).' })
  @IsDefined({ message: 'phone is required' })
  @IsString()
  @MaxLength(64)
  @IsPhone()
  phone: string;

  @ApiProperty({ example: true, description: 'Whether the code sent to the number was entered correctly. Send false when it expired unused, or leave it: after a grace it counts as not verified.' })
  @IsDefined({ message: 'verified is required' })
  @IsBoolean({ message: 'verified must be true or false' })
  verified: boolean;
}

export class RiskFeedbackAnswerDto {
  @ApiProperty({ example: true, description: 'The feedback was recorded (sent again for the same verdict, the last one counts).' })
  recorded: boolean;
}
