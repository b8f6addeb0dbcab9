/**
 * A JSON text in one canonical form, for the idempotency fingerprint (contract §7): members sorted by name at every
 * depth (of repeated names the last, as JSON.parse keeps it), and numbers compared by their exact decimal value, as
 * the payment rule compares an amount (contract §4): `25`, `25.0` and `2.5e1` are one number, `24.999999999999999`
 * another, though JSON.parse makes one float of both. A number is written as JSON.stringify writes its float when
 * that is the same decimal (so fingerprints stored before stay equal), else as `#` and its exact decimal, which no
 * other value's form can be. For a text JSON.parse accepted, nested within contract §11 (the walk recurses).
 */
import { stringEnd } from './json-scan.ts';

// RFC 8259 §6, with its parts captured: sign, integer digits, fraction digits, exponent.
const NUMBER = /-?(0|[1-9][0-9]*)(?:\.([0-9]+))?(?:[eE]([-+]?[0-9]+))?/y;
/** Exponents longer than this are kept as written (no float or amount has one): no BigInt of a megabyte. */
const MAX_EXPONENT_DIGITS = 15;

/** `text` (valid JSON) in canonical form: `{"b":1,"a":[2.50]}` → `{"a":[2.5],"b":1}`. */
export function canonicalJsonText(text: string): string {
  return readValue({ text, at: 0 });
}

interface Reader {
  readonly text: string;
  at: number;
}

function readValue(r: Reader): string {
  skipBlanks(r);
  const c = r.text.charCodeAt(r.at);
  if (c === 0x7b) return readObject(r);
  if (c === 0x5b) return readArray(r);
  if (c === 0x22) {
    const start = r.at;
    r.at = stringEnd(r.text, start) + 1;
    return JSON.stringify(JSON.parse(r.text.slice(start, r.at)));
  }
  if (c === 0x74) return literal(r, 'true');
  if (c === 0x66) return literal(r, 'false');
  if (c === 0x6e) return literal(r, 'null');
  return readNumber(r);
}

function readObject(r: Reader): string {
  const members = new Map<string, string>();
  r.at += 1;
  skipBlanks(r);
  if (r.text.charCodeAt(r.at) === 0x7d) {
    r.at += 1;
    return '{}';
  }
  for (;;) {
    skipBlanks(r);
    const end = stringEnd(r.text, r.at);
    const name = JSON.parse(r.text.slice(r.at, end + 1)) as string;
    r.at = end + 1;
    skipBlanks(r);
    r.at += 1; // the colon
    members.delete(name);
    members.set(name, readValue(r));
    skipBlanks(r);
    if (r.text.charCodeAt(r.at++) === 0x7d) break;
  }
  const names = [...members.keys()].sort();
  return `{${names.map((name) => `${JSON.stringify(name)}:${members.get(name)}`).join(',')}}`;
}

function readArray(r: Reader): string {
  const items: string[] = [];
  r.at += 1;
  skipBlanks(r);
  if (r.text.charCodeAt(r.at) === 0x5d) {
    r.at += 1;
    return '[]';
  }
  for (;;) {
    items.push(readValue(r));
    skipBlanks(r);
    if (r.text.charCodeAt(r.at++) === 0x5d) break;
  }
  return `[${items.join(',')}]`;
}

function readNumber(r: Reader): string {
  NUMBER.lastIndex = r.at;
  const match = NUMBER.exec(r.text);
  if (match === null) throw new SyntaxError(`not JSON at ${r.at}`);
  r.at += match[0].length;
  const written = JSON.stringify(Number(match[0]));
  const exact = exactDecimal(match[0]);
  const float = exactDecimal(written);
  return exact !== undefined && exact === float ? written : `#${exact ?? match[0]}`;
}

/** `text`'s exact value as digits and a power of ten (`2.50` → `25e-1`); `undefined`: no number, or a huge exponent. */
export function exactDecimal(text: string): string | undefined {
  NUMBER.lastIndex = 0;
  const match = NUMBER.exec(text);
  if (match === null || match[0].length !== text.length) return undefined;
  const [, integer, fraction = '', exponent = '0'] = match as unknown as [string, string, string?, string?];
  if (exponent.replace(/^[-+]/, '').length > MAX_EXPONENT_DIGITS) return undefined;
  let digits = `${integer}${fraction}`.replace(/^0+/, '');
  if (digits === '') return '0';
  let power = Number(exponent) - fraction.length;
  const trailing = digits.length - digits.replace(/0+$/, '').length;
  digits = digits.slice(0, digits.length - trailing);
  power += trailing;
  return `${text.startsWith('-') ? '-' : ''}${digits}e${power}`;
}

function literal(r: Reader, word: string): string {
  r.at += word.length;
  return word;
}

function skipBlanks(r: Reader): void {
  for (;;) {
    const c = r.text.charCodeAt(r.at);
    if (c !== 0x20 && c !== 0x09 && c !== 0x0a && c !== 0x0d) return;
    r.at += 1;
  }
}
