import { Injectable } from '@nestjs/common';
import { OutboxPrivacyRepository } from './outbox-privacy.repository';

/** The outbox side of an erasure (docs/privacy.md). */
@Injectable()
export class OutboxPrivacyService {
  constructor(private readonly outbox: OutboxPrivacyRepository) {}

  /** Events whose body holds the number, deleted (a pending one is never sent). */
  eraseNumber(e164: string): Promise<number> {
    return this.outbox.eraseNumber(e164);
  }
}
