import { ApiProperty } from '@nestjs/swagger';

/** One check's origin as the API shows it. */
export class CheckProvenanceDto {
  @ApiProperty({ example: 'hlr-lookups', description: 'The provider id (LOOKUP_PROVIDERS, or PROVIDER) that answered the check.' })
  provider: string;

  @ApiProperty({ example: '2026-11-22T10:00:01.000Z', description: 'When that provider answered (ISO 8601); a cached answer keeps the time of the original lookup.' })
  observed_at: string;
}
