import { Module } from '@nestjs/common';
import { CallbackClient } from './callback.client';

/** Signed callbacks to customers' URLs (public addresses only), for bulk jobs and watchlists alike. */
@Module({
  providers: [CallbackClient],
  exports: [CallbackClient],
})
export class WebhooksModule {}
