import { Module } from '@nestjs/common';
import { AbandonedChargesSweeper } from './abandoned-charges.sweeper';
import { CreditsController } from './credits.controller';
import { CreditsRepository } from './credits.repository';
import { CreditsService } from './credits.service';

@Module({
  controllers: [CreditsController],
  providers: [CreditsRepository, CreditsService, AbandonedChargesSweeper],
  exports: [CreditsService],
})
export class CreditsModule {}
