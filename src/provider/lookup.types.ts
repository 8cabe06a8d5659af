export type ConnectionStatus = 'CONNECTED' | 'ABSENT' | 'UNDETERMINED';

/** libphonenumber's number types, the contract's line_type values. */
export const LINE_TYPES = [
  'MOBILE',
  'FIXED_LINE',
  'FIXED_LINE_OR_MOBILE',
  'TOLL_FREE',
  'PREMIUM_RATE',
  'SHARED_COST',
  'VOIP',
  'PERSONAL_NUMBER',
  'PAGER',
  'UAN',
  'VOICEMAIL',
  'UNKNOWN',
] as const;
export type LineType = (typeof LINE_TYPES)[number];

/** Network Connection Status check. `carrier`: the operator serving the number now, when known. */
export interface NetworkStatusAnswer {
  status: ConnectionStatus;
  carrier: string | null;
}

/** Phone Number Type check. */
export interface NumberTypeAnswer {
  lineType: LineType;
}

/** Portability check. `carrier`: the operator serving the number now, when known. */
export interface PortabilityAnswer {
  isPorted: boolean;
  carrier: string | null;
}

/** What the enabled checks answered; a field is present only when its check ran. */
export interface LookupAnswers {
  networkStatus?: NetworkStatusAnswer;
  numberType?: NumberTypeAnswer;
  portability?: PortabilityAnswer;
}
