import { existsSync } from 'node:fs';
import { EnvironmentVariables, validateEnvironment } from './environment';

/** Reads `.env` when present (real environment variables win), then validates everything once. */
export function loadEnvironment(): EnvironmentVariables {
  if (existsSync('.env')) process.loadEnvFile('.env');
  return validateEnvironment(process.env);
}
