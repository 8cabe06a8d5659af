declare module 'express-serve-static-core' {
  interface Request {
    /** Set on every request by http-setup.ts (X-Request-Id). */
    requestId: string;
    /** false: /health/ready answers its bare status only (OPS_ENDPOINTS=private without a token; src/shell/ops-access.ts). */
    opsDetail?: boolean;
  }
}

export {};
