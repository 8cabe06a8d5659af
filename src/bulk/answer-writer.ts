import type { Clock, ClockTimer } from '../common/clock';
import type { PhoneAnswer } from './bulk-jobs.repository';

/**
 * Collects answers and writes them in batches: a batch is written once it holds `size` answers or
 * `windowMs` of the Clock after its first answer, whichever comes first (a window, not a loop: no timer
 * runs while nothing waits), one write at a time, so `processed` advances while a chunk runs without
 * a round trip per entry. A failed write is remembered and thrown by `close`.
 */
export class AnswerWriter {
  private buffer: PhoneAnswer[] = [];
  private writing: Promise<void> = Promise.resolve();
  private failure: unknown;
  private window: ClockTimer | undefined;

  constructor(
    private readonly write: (batch: PhoneAnswer[]) => Promise<unknown>,
    private readonly size: number,
    private readonly windowMs: number,
    private readonly clock: Clock,
  ) {}

  add(answer: PhoneAnswer): void {
    this.buffer.push(answer);
    if (this.buffer.length >= this.size) this.flush();
    else this.window ??= this.clock.timer(this.windowMs, () => this.flush());
  }

  /** Writes what is left and waits for every write; throws the first failure. */
  async close(): Promise<void> {
    this.flush();
    await this.writing;
    if (this.failure !== undefined) throw this.failure;
  }

  /** Starts writing the answers collected so far (after the writes already started); the window closes. Returns how many. */
  flush(): number {
    this.window?.cancel();
    this.window = undefined;
    if (this.buffer.length === 0) return 0;
    const batch = this.buffer;
    this.buffer = [];
    this.writing = this.writing
      .then(() => this.write(batch))
      .then(
        () => undefined,
        (error: unknown) => {
          this.failure ??= error;
        },
      );
    return batch.length;
  }
}
