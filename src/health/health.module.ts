import { Module } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { ProviderModule } from '../provider/provider.module';
import { HealthController } from './health.controller';

@Module({ imports: [TerminusModule.forRoot({ logger: false }), ProviderModule], controllers: [HealthController] })
export class HealthModule {}
