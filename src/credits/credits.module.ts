import { Module } from '@nestjs/common';
import { AbandonedChargesSweeper } from './abandoned-charges.sweeper';
import { CreditsController } from './credits.controller';
import { CreditsRepository } from './credits.repository';
import { CreditsService } from './credits.service';
import { ChargeBatcher } from './charge-batcher';
import { SettlementBatcher } from './settlement-batcher';

@Module({
  controllers: [CreditsController],
  providers: [CreditsRepository, CreditsService, ChargeBatcher, SettlementBatcher, AbandonedChargesSweeper],
  exports: [CreditsService],
})
export class CreditsModule {}
