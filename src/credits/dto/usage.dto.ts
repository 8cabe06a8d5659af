import { ApiProperty } from '@nestjs/swagger';
import { PageQueryDto } from '../../common/page-query.dto';
import { answeredBySchema, type AnsweredBy } from '../../checks/provenance';

export class UsageQueryDto extends PageQueryDto({ defaultLimit: 50, maxLimit: 100, cursorMaxLength: 100 }) {}

export class UsageEntryDto {
  @ApiProperty({ example: '1042' }) id: string;
  @ApiProperty({ enum: ['TOPUP', 'CHARGE', 'REFUND', 'ADJUSTMENT'] }) type: string;
  @ApiProperty({ example: -4, description: 'Credits; negative for a charge.' }) amount: number;
  @ApiProperty({ example: 9996 }) balance_after: number;
  @ApiProperty({ example: '+1415555****', nullable: true, type: String }) phone: string | null;
  @ApiProperty({ example: 'website', nullable: true, type: String }) source: string | null;
  @ApiProperty(
    answeredBySchema(
      'CHARGE of a POST /api/v1/filter call: which provider answered each of its checks and when it observed the number, by check ' +
        '(a cached answer keeps its original provider and time; with several providers, checks of one call may come from different ones). ' +
        'null for other entry types, for a refunded charge (nothing was answered), for a call whose number is invalid for its plan ' +
        '(no provider was asked), for the charges of bulk jobs and watchlist rounds (their entries carry it), and for charges made ' +
        'before this field existed.',
    ),
  )
  answered_by: AnsweredBy | null;
  @ApiProperty({ example: '2026-11-22T10:00:00.000Z' }) created_at: string;
}

export class UsagePageDto {
  @ApiProperty({ type: [UsageEntryDto] }) entries: UsageEntryDto[];
  @ApiProperty({ nullable: true, type: String, description: 'Pass as cursor to get the next (older) page; null on the last page.' })
  next_cursor: string | null;
}
