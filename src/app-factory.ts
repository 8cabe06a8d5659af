import { INestApplication, LoggerService, LogLevel } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { NestExpressApplication } from '@nestjs/platform-express';
import { AppModule } from './app.module';
import { configureHttp } from './common/http-setup';
import { setupSwagger } from './common/swagger';
import { AppConfig } from './config/app-config';

const NEST_LOG_LEVELS: Record<AppConfig['logLevel'], LogLevel[]> = {
  silent: [],
  fatal: ['fatal'],
  error: ['fatal', 'error'],
  warn: ['fatal', 'error', 'warn'],
  info: ['fatal', 'error', 'warn', 'log'],
  debug: ['fatal', 'error', 'warn', 'log', 'debug'],
};

/** The configured HTTP application, not yet listening: main.ts, the tests and the benchmark share it. */
export async function createApp(config: AppConfig, logger?: LoggerService): Promise<INestApplication> {
  const app = await NestFactory.create<NestExpressApplication>(AppModule.forRoot(config), {
    bodyParser: false,
    logger: logger ?? NEST_LOG_LEVELS[config.logLevel],
  });
  configureHttp(app);
  setupSwagger(app);
  return app;
}
