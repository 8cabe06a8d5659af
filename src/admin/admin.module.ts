import { Module } from '@nestjs/common';
import { AccountsModule } from '../accounts/accounts.module';
import { AuthModule } from '../auth/auth.module';
import { CreditsModule } from '../credits/credits.module';
import { RateLimitModule } from '../rate-limit/rate-limit.module';
import { SettingsModule } from '../settings/settings.module';
import { AdminAuditRepository } from './admin-audit.repository';
import { AdminTokenGuard } from './admin-token.guard';
import { AdminController } from './admin.controller';
import { AdminService } from './admin.service';

@Module({
  // RateLimitModule: the failed-authentication limit that wrong admin tokens count against, like wrong keys.
  imports: [AccountsModule, AuthModule, CreditsModule, RateLimitModule, SettingsModule],
  controllers: [AdminController],
  providers: [AdminService, AdminAuditRepository, AdminTokenGuard],
  exports: [AdminService],
})
export class AdminModule {}
