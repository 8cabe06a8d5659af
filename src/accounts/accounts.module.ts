import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { Account } from './account.entity';
import { AccountsRepository } from './accounts.repository';
import { AccountsService } from './accounts.service';
import { Plan } from './plan.entity';

@Module({
  imports: [TypeOrmModule.forFeature([Account, Plan])],
  providers: [AccountsRepository, AccountsService],
  exports: [AccountsService],
})
export class AccountsModule {}
