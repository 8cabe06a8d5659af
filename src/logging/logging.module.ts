import { DynamicModule, Module, RequestMethod } from '@nestjs/common';
import { LoggerModule } from 'nestjs-pino';
import { AppConfig } from '../config/app-config';
import { LOGGING_MIDDLEWARE_PATH } from '../metrics/route-label';
import { createRootLogger, pinoHttpOptions } from './pino-options';

/** nestjs-pino: JSON request lines (pino-http) and the Nest logger, both through one pino instance. */
@Module({})
export class LoggingModule {
  static forRoot(config: AppConfig): DynamicModule {
    return {
      module: LoggingModule,
      imports: [
        LoggerModule.forRoot({
          pinoHttp: pinoHttpOptions(createRootLogger(config.logLevel)),
          forRoutes: [{ path: LOGGING_MIDDLEWARE_PATH, method: RequestMethod.ALL }],
        }),
      ],
    };
  }
}
