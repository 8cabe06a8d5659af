import { Module } from '@nestjs/common';
import { SettingsController } from './settings.controller';
import { SettingsModule } from './settings.module';

/** /api/v1/settings. */
@Module({ imports: [SettingsModule], controllers: [SettingsController] })
export class SettingsHttpModule {}
