import { ApiProperty } from '@nestjs/swagger';

export class BalanceDto {
  @ApiProperty({ example: 9996, description: 'Credits available (integer). More fields may be added, never removed.' })
  balance: number;
}
