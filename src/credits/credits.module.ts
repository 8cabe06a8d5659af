import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AbandonedChargesSweeper } from './abandoned-charges.sweeper';
import { CreditsController } from './credits.controller';
import { CreditsRepository } from './credits.repository';
import { CreditsService } from './credits.service';
import { ChargeBatcher } from './charge-batcher';
import { CallerGate } from './caller-gate';
import { LedgerEntry } from './ledger-entry.entity';
import { LedgerPrivacyRepository } from './ledger-privacy.repository';
import { LedgerPrivacyService } from './ledger-privacy.service';
import { PendingGiveBacks } from './pending-give-backs';
import { SettlementBatcher } from './settlement-batcher';

@Module({
  imports: [TypeOrmModule.forFeature([LedgerEntry])],
  controllers: [CreditsController],
  providers: [CreditsRepository, CreditsService, ChargeBatcher, CallerGate, PendingGiveBacks, SettlementBatcher, AbandonedChargesSweeper, LedgerPrivacyRepository, LedgerPrivacyService],
  exports: [CreditsService, LedgerPrivacyService],
})
export class CreditsModule {}
