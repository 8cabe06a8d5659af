import type { AuthenticatedAccount } from '../auth/authenticated-account';

declare module 'express-serve-static-core' {
  interface Request {
    requestId: string;
    account?: AuthenticatedAccount;
  }
}
