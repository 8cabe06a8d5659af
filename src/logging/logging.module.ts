import { DynamicModule, Module, RequestMethod } from '@nestjs/common';
import type { NextFunction, Request, Response } from 'express';
import { LoggerModule } from 'nestjs-pino';
import { AppConfig } from '../config/app-config';
import { LOGGING_MIDDLEWARE_PATH } from '../metrics/route-label';
import { createRootLogger, requestLogging } from './pino-options';
import { redactLiteralSecrets } from './redaction';

/** The request-logging middleware of this app's logger (mounted by src/shell/http-setup.ts, before the routes). */
export class RequestLogging {
  constructor(readonly middleware: (req: Request, res: Response, next: NextFunction) => void) {}
}

/**
 * One pino instance for everything: the Nest logger (nestjs-pino) and the request lines of
 * RequestLogging, which sets each request's logger; nestjs-pino (`useExisting`) binds that logger to
 * the request's async context, so the messages logged while serving it carry its request id.
 */
@Module({})
export class LoggingModule {
  static forRoot(config: AppConfig): DynamicModule {
    redactLiteralSecrets([config.adminToken, config.opsEndpoints.metricsToken]);
    const root = createRootLogger(config.logLevel, config.logFormat);
    return {
      module: LoggingModule,
      imports: [
        LoggerModule.forRoot({
          pinoHttp: { logger: root },
          useExisting: true,
          forRoutes: [{ path: LOGGING_MIDDLEWARE_PATH, method: RequestMethod.ALL }],
        }),
      ],
      providers: [{ provide: RequestLogging, useValue: new RequestLogging(requestLogging(root)) }],
      exports: [RequestLogging],
    };
  }
}
