/** The optional `source` of a paid call or bulk job: recorded on the ledger entries. */
export const SOURCE_PATTERN = /^[A-Za-z0-9_.-]{1,64}$/;
export const SOURCE_MESSAGE = 'source must be 1 to 64 letters, digits, "_", "-" or "."';
