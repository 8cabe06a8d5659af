import { INestApplication, LoggerService } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { NestExpressApplication } from '@nestjs/platform-express';
import { Logger } from 'nestjs-pino';
import { AppModule } from './app.module';
import { setupSwagger } from './common/swagger';
import { AppConfig } from './config/app-config';
import { configureHttp } from './http-setup';

/** The configured HTTP application, not yet listening: main.ts, the tests and the benchmark share it. */
export async function createApp(config: AppConfig, logger?: LoggerService): Promise<INestApplication> {
  const app = await NestFactory.create<NestExpressApplication>(AppModule.forRoot(config), {
    bodyParser: false,
    bufferLogs: !logger,
    ...(logger ? { logger } : {}),
  });
  // Nest's own messages go through pino too (JSON, levels from LOG_LEVEL, phone numbers masked).
  if (!logger) app.useLogger(app.get(Logger));
  configureHttp(app, config);
  setupSwagger(app);
  return app;
}
