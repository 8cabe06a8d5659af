import { Global, Module } from '@nestjs/common';
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
export class ClockModule {}
