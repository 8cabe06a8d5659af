import { Module } from '@nestjs/common';
import { CreditsRepository } from './credits.repository';
import { CreditsController } from './credits.controller';
import { CreditsService } from './credits.service';

@Module({ controllers: [CreditsController], providers: [CreditsRepository, CreditsService], exports: [CreditsService] })
export class CreditsModule {}
