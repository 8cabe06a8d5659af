import { Module } from '@nestjs/common';
import { CreditsModule } from '../credits/credits.module';
import { IdempotencyRepository } from './idempotency.repository';
import { IdempotencyService } from './idempotency.service';

/** `Idempotency-Key` for any creating call (/filter, watchlists), in its own module so no feature imports another; not a leaf: it imports credits (a key's charge is the ledger row carrying its id). */
@Module({
  imports: [CreditsModule],
  providers: [IdempotencyRepository, IdempotencyService],
  exports: [IdempotencyService],
})
export class IdempotencyModule {}
