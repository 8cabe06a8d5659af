declare module 'express-serve-static-core' {
  interface Request {
    /** Set on every request by http-setup.ts (X-Request-Id). */
    requestId: string;
  }
}

export {};
