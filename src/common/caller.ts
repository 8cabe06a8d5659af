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
 * The caller of an HTTP request. When Node reads the client's FIN on a connection whose answer is not
 * sent, it ends the socket's writing side at once (no half-open connections: nothing could be answered)
 * and destroys the socket a turn later; a reset destroys it at once. So the check is three field reads,
 * no listener on the hot path. (`destroyed` alone missed a FIN read in the same turn as the charge.)
 */
export function callerOf(request: Request, response: Response): Caller {
  return {
    arrivedAt: request.arrivedAt,
    gone: () => response.destroyed || request.socket.destroyed || !request.socket.writable,
  };
}

/**
 * A paid call given up on right before its charge (nothing taken), or at its settle (its charge given
 * back, `refunded`): 503 SERVICE_UNAVAILABLE, with
 * Retry-After when it waited too long; a gone client's answer has no reader. Logged as one warning
 * line, not as a failure: under overload there is one a call.
 */
export class CallerNotServed extends AppError {
  constructor(
    readonly reason: CallerAbsence,
    message: string,
    headers: Record<string, string> = {},
    /** Charged already, and its charge given back (its client left while it was worked). */
    readonly refunded = false,
  ) {
    super('SERVICE_UNAVAILABLE', message, headers);
  }
}
