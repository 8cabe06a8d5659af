import { INestApplication, LoggerService } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { NestExpressApplication } from '@nestjs/platform-express';
import { Logger } from 'nestjs-pino';
import { AppExtensions, AppModule } from '../app.module';
import { CheckRegistry } from '../checks/check-registry';
import { describeChecks } from '../checks/checks-openapi';
import { setupSwagger } from '../common/swagger';
import { AppConfig } from '../config/app-config';
import { configureHttp } from './http-setup';
import { BoundedExpressAdapter } from './http-server';
import { QuietFrameworkLogger } from '../logging/framework-chatter';

/** The configured HTTP application, not yet listening: main.ts, the tests and the benchmark share it. */
export async function createApp(config: AppConfig, logger?: LoggerService, extensions: AppExtensions = {}): Promise<INestApplication> {
  const app = await NestFactory.create<NestExpressApplication>(AppModule.forRoot(config, extensions), new BoundedExpressAdapter(config.http), {
    bodyParser: false,
    bufferLogs: !logger,
    ...(logger ? { logger } : {}),
  });
  // Nest's own messages go through pino too (JSON, levels from LOG_LEVEL, phone numbers masked); its
  // start-up narration (modules, routes) at debug.
  if (!logger) app.useLogger(new QuietFrameworkLogger(app.get(Logger)));
  configureHttp(app, config);
  setupSwagger(app, config.adminToken !== undefined, (document) => describeChecks(document, app.get(CheckRegistry)));
  return app;
}
