import type { LoggerService } from '@nestjs/common';
import type { Logger as PinoInstance } from 'pino';
import { isFrameworkChatter } from './framework-chatter';
import { createRootLogger } from './pino-options';
import type { AppConfig } from '../config/app-config';

/**
 * The Nest logger before the app (and nestjs-pino) exists: start-up, migrations, shutdown after the
 * app is closed. Same format (LOG_FORMAT) and masking as the app's logger.
 */
export class BootLogger implements LoggerService {
  private readonly pino: PinoInstance;

  constructor(level: AppConfig['logLevel'], format: AppConfig['logFormat'] = 'json') {
    this.pino = createRootLogger(level, format);
  }

  log(message: unknown, context?: string): void {
    this.write(isFrameworkChatter(context) ? 'debug' : 'info', message, context);
  }

  error(message: unknown, stackOrContext?: string, context?: string): void {
    if (context === undefined) return this.write('error', message, stackOrContext);
    this.write('error', message, context, stackOrContext);
  }

  warn(message: unknown, context?: string): void {
    this.write('warn', message, context);
  }

  debug(message: unknown, context?: string): void {
    this.write('debug', message, context);
  }

  verbose(message: unknown, context?: string): void {
    this.write('trace', message, context);
  }

  fatal(message: unknown, context?: string): void {
    this.write('fatal', message, context);
  }

  private write(level: 'trace' | 'debug' | 'info' | 'warn' | 'error' | 'fatal', message: unknown, context?: string, stack?: string): void {
    const fields: Record<string, unknown> = { context };
    if (stack) fields.stack = stack;
    if (message instanceof Error) this.pino[level]({ ...fields, err: message });
    else if (typeof message === 'object' && message !== null) this.pino[level]({ ...fields, ...message });
    else this.pino[level](fields, String(message));
  }
}
