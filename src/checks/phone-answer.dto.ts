import { ApiProperty } from '@nestjs/swagger';
import { CONNECTION_STATUSES, type ConnectionStatus, LINE_TYPES, type LineType, type PhoneAnswer } from './phone-answer';

// The rules of the answer live in phone-answer.ts; importers of this file keep finding them here.
export * from './phone-answer';

/**
 * The answer about one phone number (PhoneAnswer) as the OpenAPI document describes it. The class name is
 * the schema's name in the OpenAPI document, which clients' generated types depend on.
 */
export class PhoneAnswerDto implements PhoneAnswer {
  @ApiProperty({ example: 'US', nullable: true, type: String, description: 'ISO 3166-1 alpha-2 region; null when no region matches.' })
  country: string | null;

  @ApiProperty({ example: true, description: 'Valid for its numbering plan and not ABSENT.' })
  valid: boolean;

  @ApiProperty({ example: 'CONNECTED', enum: CONNECTION_STATUSES })
  status: ConnectionStatus;

  @ApiProperty({ example: 'T-Mobile USA', nullable: true, type: String, description: 'Current operator when an enabled check knows it.' })
  carrier: string | null;

  @ApiProperty({ example: 'MOBILE', enum: LINE_TYPES, description: 'UNKNOWN when the Phone Number Type check is disabled.' })
  line_type: LineType;

  @ApiProperty({ example: false, description: 'false when not ported or the Portability check is disabled.' })
  is_ported: boolean;
}
