import { Injectable } from '@nestjs/common';
import { AppConfig } from '../config/app-config';
import { signCallback } from './callback-signature';

export class CallbackFailedError extends Error {}

/** The one place that calls customers' callback URLs. */
@Injectable()
export class CallbackClient {
  private readonly timeoutMs: number;

  constructor(config: AppConfig) {
    this.timeoutMs = config.bulk.webhook.timeoutMs;
  }

  /** POSTs the JSON body, signed; throws CallbackFailedError unless the receiver answers 2xx in time. */
  async post(url: string, payload: object, secret: string): Promise<void> {
    const body = JSON.stringify(payload);
    const timestamp = String(Math.floor(Date.now() / 1000));
    let response: Response;
    try {
      response = await fetch(url, {
        method: 'POST',
        headers: {
          'Content-Type': 'application/json; charset=utf-8',
          'User-Agent': 'phone-filter-webhook/1',
          'X-Signature': signCallback(secret, timestamp, body),
          'X-Signature-Timestamp': timestamp,
        },
        body,
        redirect: 'manual',
        signal: AbortSignal.timeout(this.timeoutMs),
      });
    } catch (error) {
      throw new CallbackFailedError(`callback not delivered: ${(error as Error).message}`);
    }
    await response.body?.cancel().catch(() => undefined);
    if (response.status < 200 || response.status >= 300) throw new CallbackFailedError(`callback answered HTTP ${response.status}`);
  }
}
