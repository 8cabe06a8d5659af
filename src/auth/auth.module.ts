import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AccountsModule } from '../accounts/accounts.module';
import { ApiKey } from './api-key.entity';
import { ApiKeysRepository } from './api-keys.repository';
import { ApiKeysService } from './api-keys.service';

/**
 * API keys. The guard (api-key.guard.ts) is the app's: AppModule registers it as a global guard, so the
 * admin CLI, which loads this module, loads no HTTP (express, Swagger) through it.
 */
@Module({
  imports: [TypeOrmModule.forFeature([ApiKey]), AccountsModule],
  providers: [ApiKeysRepository, ApiKeysService],
  exports: [ApiKeysService],
})
export class AuthModule {}
