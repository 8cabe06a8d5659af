/** What a handler knows about its caller once the API key guard has let the request through. */
export interface AuthenticatedAccount {
  accountId: string;
  keyId: string;
  plan: { name: string; limit: number; windowSeconds: number };
}
