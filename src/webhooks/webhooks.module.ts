import { Module } from '@nestjs/common';
import { SettingsModule } from '../settings/settings.module';
import { CallbackClient } from './callback.client';
import { EventsController } from './events.controller';
import { EventsDispatcher } from './events.dispatcher';
import { EventsRepository } from './events.repository';
import { EventsService } from './events.service';

/**
 * Signed deliveries to customers' URLs (public addresses only): the client bulk jobs and watchlists
 * use, and the account events outbox (balance.low, bulk.completed to webhook_url).
 */
@Module({
  imports: [SettingsModule],
  controllers: [EventsController],
  providers: [CallbackClient, EventsRepository, EventsService, EventsDispatcher],
  exports: [CallbackClient, EventsService],
})
export class WebhooksModule {}
