import type { PhoneAnswer } from './bulk-jobs.repository';

/**
 * Collects answers and writes them in batches (every `size` answers or `intervalMs`, whichever
 * comes first), one write at a time, so `processed` advances while a chunk runs without a round
 * trip per entry. A failed write is remembered and thrown by `close`.
 */
export class AnswerWriter {
  private buffer: PhoneAnswer[] = [];
  private writing: Promise<void> = Promise.resolve();
  private failure: unknown;
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly write: (batch: PhoneAnswer[]) => Promise<unknown>,
    private readonly size: number,
    intervalMs: number,
  ) {
    this.timer = setInterval(() => this.flush(), intervalMs);
    this.timer.unref();
  }

  add(answer: PhoneAnswer): void {
    this.buffer.push(answer);
    if (this.buffer.length >= this.size) this.flush();
  }

  /** Writes what is left and waits for every write; throws the first failure. */
  async close(): Promise<void> {
    clearInterval(this.timer);
    this.flush();
    await this.writing;
    if (this.failure !== undefined) throw this.failure;
  }

  private flush(): void {
    if (this.buffer.length === 0) return;
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
  }
}
