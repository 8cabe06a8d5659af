import type { Request, Response } from 'express';
import { AppError } from './errors';

/**
 * The client a paid call answers, as the charge sees it: the charge is the point of no return, so it
 * is taken only for a caller who is still there and has not waited past the queue deadline
 * (CALL_QUEUE_DEADLINE_MS). docs/api.md "A client that goes".
 */
export interface Caller {
  /** When its request arrived, by the injected Clock (set by src/shell/http-setup.ts). */
  readonly arrivedAt: number;
  /** The client closed (or reset) the connection before its answer was sent. */
  gone(): boolean;
}

/** Why a call is not charged: its client has gone, or it waited past the queue deadline. */
export type CallerAbsence = 'client_gone' | 'queue_deadline';

/**
 * The caller of an HTTP request. Node destroys the response (and the socket) as soon as it reads the
 * client's FIN or a reset on a connection whose answer is not sent, so the check is two field reads:
 * no listener is added on the hot path.
 */
export function callerOf(request: Request, response: Response): Caller {
  return {
    arrivedAt: request.arrivedAt,
    gone: () => response.destroyed || request.socket.destroyed,
  };
}

/**
 * A paid call given up on right before its charge (nothing taken): 503 SERVICE_UNAVAILABLE, with
 * Retry-After when it waited too long; a gone client's answer has no reader. Logged as one warning
 * line, not as a failure: under overload there is one a call.
 */
export class CallerNotServed extends AppError {
  constructor(
    readonly reason: CallerAbsence,
    message: string,
    headers: Record<string, string> = {},
  ) {
    super('SERVICE_UNAVAILABLE', message, headers);
  }
}
