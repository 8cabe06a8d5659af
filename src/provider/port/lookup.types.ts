import type { ConnectionStatus, LineType } from '../../checks/phone-answer.dto';

export { LINE_TYPES } from '../../checks/phone-answer.dto';
export type { ConnectionStatus, LineType } from '../../checks/phone-answer.dto';

/*
 * The adapters' protocol-level answers of the built-in checks (their per-endpoint methods). The port
 * itself answers one check at a time with a full record (CheckAnswer, src/checks/).
 */

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
