import { Module } from '@nestjs/common';
import { WatchlistPrivacyRepository } from './watchlist-privacy.repository';
import { WatchlistPrivacyService } from './watchlist-privacy.service';

/**
 * Retention and erasure of watchlist entries, changes, rounds and events, apart from WatchlistsModule
 * so that the erasure (also run from the admin CLI) does not start the watchlist workers.
 */
@Module({
  providers: [WatchlistPrivacyRepository, WatchlistPrivacyService],
  exports: [WatchlistPrivacyService],
})
export class WatchlistPrivacyModule {}
