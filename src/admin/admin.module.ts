import { Module } from '@nestjs/common';
import { AccountsModule } from '../accounts/accounts.module';
import { AuthModule } from '../auth/auth.module';
import { CreditsModule } from '../credits/credits.module';
import { SettingsModule } from '../settings/settings.module';
import { AdminAuditRepository } from './admin-audit.repository';
import { AdminTokenGuard } from './admin-token.guard';
import { AdminController } from './admin.controller';
import { AdminService } from './admin.service';

@Module({
  imports: [AccountsModule, AuthModule, CreditsModule, SettingsModule],
  controllers: [AdminController],
  providers: [AdminService, AdminAuditRepository, AdminTokenGuard],
  exports: [AdminService],
})
export class AdminModule {}
