import { Module } from '@nestjs/common';
import { CreditsController } from './credits.controller';
import { CreditsModule } from './credits.module';

/** /api/v1/balance and /api/v1/usage. */
@Module({ imports: [CreditsModule], controllers: [CreditsController] })
export class CreditsHttpModule {}
