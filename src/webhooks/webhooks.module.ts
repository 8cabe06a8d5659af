import { Module } from '@nestjs/common';
import { SettingsModule } from '../settings/settings.module';
import { CallbackClient } from './callback.client';
import { EventsController } from './events.controller';
import { EventsDispatcher } from './events.dispatcher';
import { EventsRepository } from './events.repository';
import { EventsService } from './events.service';

/**
 * Every signed delivery to customers' URLs (public addresses only): one outbox (account_events), one
 * dispatcher, one retry schedule, one signature. Other modules only record what to send
 * (EventsService); none of them calls a URL.
 */
@Module({
  imports: [SettingsModule],
  controllers: [EventsController],
  providers: [CallbackClient, EventsRepository, EventsService, EventsDispatcher],
  exports: [EventsService],
})
export class WebhooksModule {}
