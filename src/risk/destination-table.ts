/** What the destination table says of a number: its risk (0-100) and the entry that said it. */
export interface DestinationRisk {
  risk: number;
  /** The entry that matched (a prefix like `+882`, or a country like `CU`); null when none did. */
  key: string | null;
  /** Whether the account's own adjustment said it (else the deployment's table). */
  adjusted: boolean;
}

/**
 * The deployment's destination risk table (RISK_DESTINATIONS, or the default), with an account's
 * adjustments over it. The most specific entry wins: the longest E.164 prefix of the number, else its
 * country; at the same key, the account's adjustment wins over the deployment's entry.
 */
export class DestinationTable {
  private readonly longestPrefix: number;

  constructor(private readonly entries: Readonly<Record<string, number>>) {
    this.longestPrefix = Math.max(1, ...Object.keys(entries).filter((key) => key.startsWith('+')).map((key) => key.length));
  }

  get size(): number {
    return Object.keys(this.entries).length;
  }

  riskOf(e164: string, country: string | null, adjustments: Readonly<Record<string, number>> = {}): DestinationRisk {
    const longest = Math.min(e164.length, Math.max(this.longestPrefix, ...prefixLengths(adjustments)));
    for (let length = longest; length >= 2; length--) {
      const found = this.lookup(e164.slice(0, length), adjustments);
      if (found) return found;
    }
    return (country && this.lookup(country, adjustments)) || { risk: 0, key: null, adjusted: false };
  }

  private lookup(key: string, adjustments: Readonly<Record<string, number>>): DestinationRisk | undefined {
    if (key in adjustments) return { risk: adjustments[key], key, adjusted: true };
    if (key in this.entries) return { risk: this.entries[key], key, adjusted: false };
    return undefined;
  }
}

function prefixLengths(adjustments: Readonly<Record<string, number>>): number[] {
  return Object.keys(adjustments)
    .filter((key) => key.startsWith('+'))
    .map((key) => key.length);
}
