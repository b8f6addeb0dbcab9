/** PostgreSQL's WAL positions (`pg_lsn`) as numbers, and as fixed-width text that compares the same way. */

const LSN = /^([0-9A-Fa-f]{1,8})\/([0-9A-Fa-f]{1,8})$/;

/** The position `text` (two hexadecimal halves, `16/B374D848`) names, or `undefined`. */
export function parseLsn(text: string | null | undefined): bigint | undefined {
  const match = text === null || text === undefined ? null : LSN.exec(text);
  if (match === null) return undefined;
  return (BigInt(`0x${match[1]}`) << 32n) | BigInt(`0x${match[2]}`);
}

/**
 * `lsn` as 16 hexadecimal digits: two positions compare as their texts do (what Redis keeps).
 *
 * @example
 * lsnKey(0x16B374D848n) // '00000016b374d848'
 */
export function lsnKey(lsn: bigint): string {
  return lsn.toString(16).padStart(16, '0');
}

/** The position `lsnKey()` wrote, or `undefined`. */
export function parseLsnKey(text: string | null | undefined): bigint | undefined {
  return text !== null && text !== undefined && /^[0-9a-f]{16}$/.test(text) ? BigInt(`0x${text}`) : undefined;
}
