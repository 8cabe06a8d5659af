import { Injectable } from '@nestjs/common';
import http from 'node:http';
import https from 'node:https';
import { Clock } from '../common/clock';
import { AppConfig } from '../config/app-config';
import { type CallbackAddressPolicy, publicOnlyLookup, refusedCallbackUrl } from '../common/callback-address';
import { signatureHeader } from './callback-signature';

/**
 * A callback that was not delivered. `message` is the detail, for the operator's log (the address a
 * name resolved to, the socket error); `customerMessage` is what the customer may see (an event's
 * `last_error`): it never names or resolves a host of this service's network (issue 24 #8).
 */
export class CallbackFailedError extends Error {
  constructor(
    readonly customerMessage: string,
    detail = customerMessage,
  ) {
    super(detail);
  }
}

/** What a customer is told of a connection that failed: the class of the failure, no address, no name. */
function customerReason(error: NodeJS.ErrnoException, timeoutMs: number): string {
  if (error.code === 'ENOTPUBLIC') return 'callback not delivered: its host does not resolve to a public address';
  if (error.code === 'ENOTFOUND' || error.code === 'EAI_AGAIN') return 'callback not delivered: its host name could not be resolved';
  if (error.name === 'AbortError' || error.name === 'TimeoutError') return `callback not delivered: no answer within ${timeoutMs} ms`;
  return 'callback not delivered: the receiver could not be reached';
}

/**
 * The one place that calls customers' callback URLs (used by EventsDispatcher only). Unless
 * CALLBACK_ALLOW_PRIVATE_NETWORKS is set, it connects only to public addresses (checked on the address it connects to, see
 * publicOnlyLookup), so a callback cannot be aimed at this service's own network.
 */
@Injectable()
export class CallbackClient {
  private readonly timeoutMs: number;
  private readonly policy: CallbackAddressPolicy;

  constructor(
    config: AppConfig,
    private readonly clock: Clock,
  ) {
    this.timeoutMs = config.callbacks.timeoutMs;
    this.policy = config.callbacks;
  }

  /**
   * POSTs the JSON body, signed with each of `secrets` (the current webhook secret, and the previous
   * one during its grace period); throws CallbackFailedError unless the receiver answers 2xx in time.
   * Redirects are not followed.
   */
  async post(url: string, payload: object, secrets: string[]): Promise<void> {
    const refused = refusedCallbackUrl(url, this.policy);
    if (refused) throw new CallbackFailedError('callback not delivered: callback_url is not a public address on an allowed port', `callback not delivered: ${refused}`);
    const target = new URL(url);
    const body = JSON.stringify(payload);
    const timestamp = String(Math.floor(this.clock.now() / 1000));
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
          lookup: this.policy.allowPrivateNetworks ? undefined : publicOnlyLookup,
          signal: AbortSignal.timeout(this.timeoutMs),
        },
        (response) => {
          resolve(response.statusCode ?? 0);
          response.destroy(); // the answer is its status; the body is not read
        },
      );
      request.on('error', (error) => reject(new CallbackFailedError(customerReason(error, this.timeoutMs), `callback not delivered: ${error.message}`)));
      request.end(body);
    });
    if (status < 200 || status >= 300) throw new CallbackFailedError(`callback answered HTTP ${status}`);
  }
}
