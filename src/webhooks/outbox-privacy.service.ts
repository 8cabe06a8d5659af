import { Injectable } from '@nestjs/common';
import { erasureHashes } from '../common/number-hash';
import { AppConfig } from '../config/app-config';
import { OutboxPrivacyRepository } from './outbox-privacy.repository';

/** The outbox side of an erasure (docs/privacy.md). */
@Injectable()
export class OutboxPrivacyService {
  constructor(
    private readonly outbox: OutboxPrivacyRepository,
    private readonly config: AppConfig,
  ) {}

  /** Events whose body holds the number, deleted (a pending one is never sent). */
  eraseNumber(e164: string): Promise<number> {
    return this.outbox.eraseNumber(e164, erasureHashes(this.config.dataHashKey, e164));
  }
}
