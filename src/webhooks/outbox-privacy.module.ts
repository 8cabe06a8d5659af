import { Module } from '@nestjs/common';
import { OutboxPrivacyRepository } from './outbox-privacy.repository';
import { OutboxPrivacyService } from './outbox-privacy.service';

/** Erasure in the outbox, apart from WebhooksModule so that the admin CLI does not start its dispatcher. */
@Module({
  providers: [OutboxPrivacyRepository, OutboxPrivacyService],
  exports: [OutboxPrivacyService],
})
export class OutboxPrivacyModule {}
