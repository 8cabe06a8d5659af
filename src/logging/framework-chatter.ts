import type { LoggerService } from '@nestjs/common';

/** Nest's start-up narration (each module loaded, each route mapped): ~70 lines nobody needs at info. */
const CHATTY_CONTEXTS = new Set(['NestFactory', 'InstanceLoader', 'RoutesResolver', 'RouterExplorer', 'NestApplication']);

export function isFrameworkChatter(context: unknown): boolean {
  return typeof context === 'string' && CHATTY_CONTEXTS.has(context);
}

/** The app's logger, with Nest's start-up narration moved to debug (LOG_LEVEL=debug shows it again). */
export class QuietFrameworkLogger implements LoggerService {
  constructor(private readonly inner: LoggerService) {}

  log(message: unknown, ...rest: unknown[]): void {
    if (isFrameworkChatter(rest.at(-1))) this.inner.debug?.(message, ...rest);
    else this.inner.log(message, ...rest);
  }

  error(message: unknown, ...rest: unknown[]): void {
    this.inner.error(message, ...rest);
  }

  warn(message: unknown, ...rest: unknown[]): void {
    this.inner.warn(message, ...rest);
  }

  debug(message: unknown, ...rest: unknown[]): void {
    this.inner.debug?.(message, ...rest);
  }

  verbose(message: unknown, ...rest: unknown[]): void {
    this.inner.verbose?.(message, ...rest);
  }

  fatal(message: unknown, ...rest: unknown[]): void {
    this.inner.fatal?.(message, ...rest);
  }
}
