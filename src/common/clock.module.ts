import { DynamicModule, Global, Module } from '@nestjs/common';
import { Clock, SystemClock } from './clock';
import { ClockScheduler, Scheduler } from './scheduler';

/** The Clock and the Scheduler of background jobs, injectable everywhere; tests override both (test/helpers/manual-clock.ts). */
@Global()
@Module({
  providers: [
    { provide: Clock, useClass: SystemClock },
    { provide: Scheduler, useClass: ClockScheduler },
  ],
  exports: [Clock, Scheduler],
})
export class ClockModule {
  /** The same on a given clock: a test that boots the whole app moves its time (a ManualClock) instead of waiting. */
  static on(clock: Clock): DynamicModule {
    return {
      module: ClockModule,
      global: true,
      providers: [{ provide: Clock, useValue: clock }, { provide: Scheduler, useClass: ClockScheduler }],
      exports: [Clock, Scheduler],
    };
  }
}
