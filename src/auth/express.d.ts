import type { AuthenticatedAccount } from './authenticated-account';

declare module 'express-serve-static-core' {
  interface Request {
    /** Set by ApiKeyGuard on the customer API's requests. */
    account?: AuthenticatedAccount;
    /**
     * The key's verification, started before the body is read (src/shell/body-budget.ts) so that a body is
     * inflated in full only for a valid key; ApiKeyGuard awaits it instead of verifying again.
     */
    keyVerification?: Promise<AuthenticatedAccount>;
  }
}
