import { Module } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { ProviderModule } from '../provider/provider.module';
import { HealthController } from './health.controller';
import { ReadinessProbe } from './readiness-probe';

@Module({ imports: [TerminusModule.forRoot({ logger: false }), ProviderModule], controllers: [HealthController], providers: [ReadinessProbe] })
export class HealthModule {}
