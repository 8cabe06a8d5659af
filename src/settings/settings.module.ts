import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AuditModule } from '../audit/audit.module';
import { AccountSettings } from './account-settings.entity';
import { SettingsRepository } from './settings.repository';
import { SettingsService } from './settings.service';

/** Account settings, without HTTP (SettingsHttpModule adds the routes): the admin CLI loads this. */
@Module({
  imports: [TypeOrmModule.forFeature([AccountSettings]), AuditModule],
  providers: [SettingsRepository, SettingsService],
  exports: [SettingsService],
})
export class SettingsModule {}
