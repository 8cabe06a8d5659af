import { DynamicModule, Global, Logger, Module, OnApplicationBootstrap } from '@nestjs/common';
import { BUILT_IN_CHECKS } from './built-in-checks';
import type { CheckRegistration } from './check-definition';
import { CheckRegistry, CheckTuning } from './check-registry';

/**
 * The CheckRegistry, injectable everywhere: the built-in checks, then `extra` ones (a deployment's or a
 * test's own check, each with the adapter that answers it), with prices and cache lifetimes from
 * `tuning` (AppConfig.checkTuning) or their defaults.
 */
@Global()
@Module({})
export class ChecksModule implements OnApplicationBootstrap {
  constructor(private readonly registry: CheckRegistry) {}

  onApplicationBootstrap(): void {
    const unused = this.registry.unusedVariables();
    if (unused.length > 0) new Logger('Checks').warn(`Set but read by no check (a typo?): ${unused.join(', ')}. Checks: ${this.registry.names().join(', ')}.`);
  }

  static forRoot(tuning: CheckTuning, extra: readonly CheckRegistration[] = []): DynamicModule {
    const registry = new CheckRegistry([...BUILT_IN_CHECKS.map((definition) => ({ definition })), ...extra], tuning);
    return { module: ChecksModule, providers: [{ provide: CheckRegistry, useValue: registry }], exports: [CheckRegistry] };
  }
}
