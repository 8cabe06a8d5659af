import { ApiProperty } from '@nestjs/swagger';
import { PageQueryDto } from '../../common/page-query.dto';
import { EVENT_STATES } from '../events.repository';
import type { EventState } from '../events.repository';

export const EVENT_TYPES = ['balance.low', 'bulk.completed'] as const;

export class AccountEventDto {
  @ApiProperty({ example: '42', description: 'Also the `id` of the delivered body.' }) id: string;
  @ApiProperty({ enum: EVENT_TYPES, example: 'balance.low' }) type: string;
  @ApiProperty({
    type: 'object',
    additionalProperties: true,
    example: { account_id: '5b0c6f1e-8a8c-4f6e-9a52-0d4c1d8b2f10', balance: 996, threshold: 1000 },
    description: 'balance.low: `{ account_id, balance, threshold }`; bulk.completed: `{ id, status, total }` of the job.',
  })
  data: Record<string, unknown>;
  @ApiProperty({
    enum: EVENT_STATES,
    example: 'delivered',
    description: 'pending (being delivered or waiting for a retry), delivered (2xx), failed (every retry failed), no_webhook (no webhook_url when it was due).',
  })
  state: EventState;
  @ApiProperty({ example: 1, description: 'Delivery attempts so far.' }) attempts: number;
  @ApiProperty({ nullable: true, type: String, example: null, description: 'Why the last attempt failed.' }) last_error: string | null;
  @ApiProperty({ format: 'date-time' }) created_at: string;
  @ApiProperty({ format: 'date-time', nullable: true, type: String }) delivered_at: string | null;
}

export class AccountEventPageDto {
  @ApiProperty({ type: [AccountEventDto] }) events: AccountEventDto[];
  @ApiProperty({ nullable: true, type: String, example: null, description: 'Pass as cursor to get the next (older) page; null on the last page.' })
  next_cursor: string | null;
}

export class EventsQueryDto extends PageQueryDto({ defaultLimit: 50, maxLimit: 200, cursorMaxLength: 100 }) {}
