import { Module } from '@nestjs/common';
import { BulkPrivacyRepository } from './bulk-privacy.repository';
import { BulkPrivacyService } from './bulk-privacy.service';

/**
 * Retention and erasure of bulk entries, apart from BulkModule so that the erasure (also run from the
 * admin CLI) does not start the bulk queue's workers.
 */
@Module({
  providers: [BulkPrivacyRepository, BulkPrivacyService],
  exports: [BulkPrivacyService],
})
export class BulkPrivacyModule {}
