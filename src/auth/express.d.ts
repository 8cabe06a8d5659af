import type { AuthenticatedAccount } from './authenticated-account';

declare module 'express-serve-static-core' {
  interface Request {
    /** Set by ApiKeyGuard on the customer API's requests. */
    account?: AuthenticatedAccount;
  }
}
