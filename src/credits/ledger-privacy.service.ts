import { Injectable } from '@nestjs/common';
import { daysBefore } from '../common/clock';
import { maskPhone } from '../common/phone';
import { AppConfig } from '../config/app-config';
import { LedgerPrivacyRepository } from './ledger-privacy.repository';

/** The ledger keeps what money needs and only the masked form of a number (docs/privacy.md). */
@Injectable()
export class LedgerPrivacyService {
  constructor(
    private readonly ledger: LedgerPrivacyRepository,
    private readonly config: AppConfig,
  ) {}

  /** One retention batch: phones of rows older than RETENTION_LEDGER_PHONE_DAYS at `now` reduced to their masked form. */
  async maskOldPhones(limit: number, now: Date): Promise<number> {
    const rows = await this.ledger.unmaskedBefore(daysBefore(now, this.config.retention.ledgerPhoneDays), limit);
    return this.ledger.setMasked(rows.map((row) => ({ ...row, masked: maskPhone(row.phone) })));
  }

  /** Erasure: every row still holding the whole number keeps only its masked form. */
  async maskNumber(e164: string): Promise<number> {
    const rows = await this.ledger.unmaskedOf(e164);
    return this.ledger.setMasked(rows.map((row) => ({ ...row, masked: maskPhone(row.phone) })));
  }
}
