import { Module } from '@nestjs/common';
import { AccountsModule } from '../accounts/accounts.module';
import { AuthModule } from '../auth/auth.module';
import { CreditsModule } from '../credits/credits.module';
import { AdminService } from './admin.service';

@Module({ imports: [AccountsModule, AuthModule, CreditsModule], providers: [AdminService], exports: [AdminService] })
export class AdminModule {}
