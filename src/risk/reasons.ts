/**
 * The reason codes of a risk verdict: stable, documented (docs/sms-pumping.md "What each reason
 * means"), each with what it catches. The codes never change meaning; new ones may be added.
 */
export const REASON_CODES = {
  PREMIUM_RATE: 'A premium-rate number: texting or calling it pays its owner.',
  SHARED_COST: 'A shared-cost number: the caller pays more than a normal call, and it cannot take a text.',
  TOLL_FREE: 'A toll-free number: it cannot take a text, and calls to it are paid by its owner.',
  PAGER: 'A pager number: it cannot take a one-time code.',
  VOICEMAIL: 'A voicemail access number: nobody reads a code sent there.',
  PERSONAL_NUMBER: 'A personal (follow-me) number: a forwarding service, not a phone.',
  UAN: 'A universal access number: a company switchboard, not a person.',
  VOIP: 'A VoIP number: virtual, cheap to get in bulk, and often disposable.',
  FIXED_LINE: 'A landline: it cannot take a text message.',
  INVALID_NUMBER: 'Not a valid number for its numbering plan: unallocated or made up.',
  HIGH_RISK_DESTINATION: 'A destination that the destination table rates as high-cost or often abused.',
  RANGE_VELOCITY: 'Many distinct numbers of one number range in a short time: pumping walks through ranges an operator shares revenue on.',
  SEQUENTIAL_NUMBERS: 'Several near-consecutive numbers: a script counting through a range.',
  IP_VELOCITY: 'Many distinct numbers asked from one IP address.',
  MANY_COUNTRIES: 'One IP address, or one source, asking for numbers of many countries.',
  LOW_VERIFICATION_RATE: 'Codes sent to numbers like this one are rarely entered: real people verify, pumping never does.',
  NOT_LIVE: 'The number was last seen not connected to a network.',
  RECENT_SIM_SWAP: 'The SIM behind the number changed recently: whoever has the phone now may not be its owner.',
} as const;

export type ReasonCode = keyof typeof REASON_CODES;

export const REASON_CODE_LIST = Object.keys(REASON_CODES) as ReasonCode[];

/** One reason of a verdict: its code and, in plain words, why it applies to this number. */
export interface RiskReason {
  code: ReasonCode;
  message: string;
}
