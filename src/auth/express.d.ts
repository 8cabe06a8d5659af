import type { AuthenticatedAccount } from './authenticated-account';

declare module 'express-serve-static-core' {
  interface Request {
    /** Set by ApiKeyGuard on the customer API's requests. */
    account?: AuthenticatedAccount;
    /**
     * Set by ApiKeyGuard when it let a key known to this instance through while the address's
     * failed-authentication check was still under way; the plan limit guard awaits it first.
     */
    pendingAttemptCheck?: Promise<void>;
  }
}
