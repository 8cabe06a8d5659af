declare module 'express-serve-static-core' {
  interface Request {
    /** Set on every request by http-setup.ts (X-Request-Id). */
    requestId: string;
    /** When the request arrived, by the injected Clock (http-setup.ts): a paid call's queue deadline counts from it (src/common/caller.ts). */
    arrivedAt: number;
    /** false: /health/ready answers its bare status only (OPS_ENDPOINTS=private without a token; src/shell/ops-access.ts). */
    opsDetail?: boolean;
  }
}

export {};
