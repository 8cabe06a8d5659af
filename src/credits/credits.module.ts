import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AbandonedChargesSweeper } from './abandoned-charges.sweeper';
import { CreditsRepository } from './credits.repository';
import { CreditsService } from './credits.service';
import { ChargeBatcher } from './charge-batcher';
import { CallerGate } from './caller-gate';
import { LedgerEntry } from './ledger-entry.entity';
import { LedgerPrivacyRepository } from './ledger-privacy.repository';
import { LedgerPrivacyService } from './ledger-privacy.service';
import { PendingGiveBacks } from './pending-give-backs';
import { SettlementBatcher } from './settlement-batcher';

/** Credits and the ledger, without HTTP (CreditsHttpModule adds the routes): the admin CLI loads this. */
@Module({
  imports: [TypeOrmModule.forFeature([LedgerEntry])],
  providers: [CreditsRepository, CreditsService, ChargeBatcher, CallerGate, PendingGiveBacks, SettlementBatcher, AbandonedChargesSweeper, LedgerPrivacyRepository, LedgerPrivacyService],
  exports: [CreditsService, LedgerPrivacyService],
})
export class CreditsModule {}
