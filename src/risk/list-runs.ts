import { rangesOf } from './number-ranges';

/** What a list says of one of its numbers: how many of its distinct numbers share its 100-number block, and lie within 30 consecutive numbers of it. */
export interface ListNeighbours {
  block: number;
  nearby: number;
}

/**
 * The runs within a list checked in one bulk job (docs/sms-pumping.md "Bulk jobs"): a pumped list is
 * blocks of consecutive numbers, so its numbers are counted against each other as if asked within the
 * hour, at the granularities that a legitimate list does not fill (the 100-number block, the 30 numbers
 * around one). Its 10,000-number ranges are not: a local business's contacts share a few exchanges.
 */
export class ListRuns {
  private readonly blocks = new Map<string, number>();
  private readonly tens = new Map<string, number>();

  /** `numbers`: the list's valid numbers (E.164), duplicates counted once. */
  constructor(numbers: Iterable<string>) {
    for (const e164 of new Set(numbers)) {
      const { block, ten } = rangesOf(e164);
      this.blocks.set(block, (this.blocks.get(block) ?? 0) + 1);
      this.tens.set(ten, (this.tens.get(ten) ?? 0) + 1);
    }
  }

  /** The number's neighbours in the list, itself included (a number of the list counts at least 1 in each). */
  of(e164: string): ListNeighbours {
    const { block, ten, tenBefore, tenAfter } = rangesOf(e164);
    const tens = [ten, tenBefore, tenAfter].reduce((sum, key) => sum + (key === null ? 0 : (this.tens.get(key) ?? 0)), 0);
    return { block: this.blocks.get(block) ?? 0, nearby: tens };
  }
}
