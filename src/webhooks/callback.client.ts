import { Injectable } from '@nestjs/common';
import http from 'node:http';
import https from 'node:https';
import { AppConfig } from '../config/app-config';
import { publicOnlyLookup, refusedCallbackUrl } from './callback-address';
import { signatureHeader } from './callback-signature';

export class CallbackFailedError extends Error {}

/**
 * The one place that calls customers' callback URLs. Unless BULK_CALLBACK_ALLOW_PRIVATE_NETWORKS is
 * set, it connects only to public addresses (checked on the address it connects to, see
 * publicOnlyLookup), so a callback cannot be aimed at this service's own network.
 */
@Injectable()
export class CallbackClient {
  private readonly timeoutMs: number;
  private readonly allowPrivateNetworks: boolean;

  constructor(config: AppConfig) {
    this.timeoutMs = config.bulk.webhook.timeoutMs;
    this.allowPrivateNetworks = config.bulk.webhook.allowPrivateNetworks;
  }

  /**
   * POSTs the JSON body, signed with each of `secrets` (the current webhook secret, and the previous
   * one during its grace period); throws CallbackFailedError unless the receiver answers 2xx in time.
   * Redirects are not followed.
   */
  async post(url: string, payload: object, secrets: string[]): Promise<void> {
    const refused = refusedCallbackUrl(url, this.allowPrivateNetworks);
    if (refused) throw new CallbackFailedError(`callback not delivered: ${refused}`);
    const target = new URL(url);
    const body = JSON.stringify(payload);
    const timestamp = String(Math.floor(Date.now() / 1000));
    const status = await new Promise<number>((resolve, reject) => {
      const request = (target.protocol === 'https:' ? https : http).request(
        target,
        {
          method: 'POST',
          headers: {
            'Content-Type': 'application/json; charset=utf-8',
            'Content-Length': Buffer.byteLength(body),
            'User-Agent': 'phone-filter-webhook/1',
            'X-Signature': signatureHeader(secrets, timestamp, body),
            'X-Signature-Timestamp': timestamp,
          },
          lookup: this.allowPrivateNetworks ? undefined : publicOnlyLookup,
          signal: AbortSignal.timeout(this.timeoutMs),
        },
        (response) => {
          resolve(response.statusCode ?? 0);
          response.destroy(); // the answer is its status; the body is not read
        },
      );
      request.on('error', (error) => reject(new CallbackFailedError(`callback not delivered: ${error.message}`)));
      request.end(body);
    });
    if (status < 200 || status >= 300) throw new CallbackFailedError(`callback answered HTTP ${status}`);
  }
}
