/** `1 credit`, `4 credits`: how a message counts credits. */
export function creditCount(amount: number): string {
  return `${amount} credit${amount === 1 ? '' : 's'}`;
}
