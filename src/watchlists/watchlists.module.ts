import { Module } from '@nestjs/common';
import { AccountsModule } from '../accounts/accounts.module';
import { CreditsModule } from '../credits/credits.module';
import { IdempotencyModule } from '../idempotency/idempotency.module';
import { ProviderModule } from '../provider/provider.module';
import { SettingsModule } from '../settings/settings.module';
import { WebhooksModule } from '../webhooks/webhooks.module';
import { RoundRunner } from './round-runner';
import { RoundsRepository } from './rounds.repository';
import { WatchlistCallbacks } from './watchlist-callbacks';
import { WatchlistWorker } from './watchlist-worker';
import { WatchlistsController } from './watchlists.controller';
import { WatchlistsRepository } from './watchlists.repository';
import { WatchlistsService } from './watchlists.service';

@Module({
  imports: [AccountsModule, SettingsModule, CreditsModule, ProviderModule, IdempotencyModule, WebhooksModule],
  controllers: [WatchlistsController],
  providers: [WatchlistsRepository, RoundsRepository, WatchlistCallbacks, RoundRunner, WatchlistWorker, WatchlistsService],
})
export class WatchlistsModule {}
