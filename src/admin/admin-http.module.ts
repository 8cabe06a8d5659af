import { Module } from '@nestjs/common';
import { RateLimitModule } from '../rate-limit/rate-limit.module';
import { AdminTokenGuard } from './admin-token.guard';
import { AdminController } from './admin.controller';
import { AdminModule } from './admin.module';

/** /admin/v1: the admin operations behind ADMIN_TOKEN. */
@Module({
  // RateLimitModule: the failed-authentication limit that wrong admin tokens count against, like wrong keys.
  imports: [AdminModule, RateLimitModule],
  controllers: [AdminController],
  providers: [AdminTokenGuard],
})
export class AdminHttpModule {}
