/**
 * JSON text read without parsing it (contract §11): a body's shape (its nesting, and whether it holds more than
 * anything should walk), measured before JSON.parse makes an element of it, and one member's source text. One pass
 * each, without recursion, so any body is safe to read; strings, escaped quotes included, are skipped whole.
 */
import { jsonPointer } from './json-pointer.ts';

/** The deepest nesting of a body: every walk over a parsed body recurses, so this keeps it far from the stack's end. */
export const MAX_JSON_DEPTH = 32;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const COLON = 0x3a;
const BLANKS = new Set([0x20, 0x09, 0x0a, 0x0d]);
const OPEN_ARRAY = 0x5b; // [
const OPEN_OBJECT = 0x7b; // {
const CLOSE_ARRAY = 0x5d; // ]
const CLOSE_OBJECT = 0x7d; // }
const OPEN = new Set([OPEN_ARRAY, OPEN_OBJECT]);
const CLOSE = new Set([CLOSE_ARRAY, CLOSE_OBJECT]);

/** The deepest nesting of arrays and objects in `text`, measured at any depth. */
export function jsonNesting(text: string): number {
  return scanJson(text, true).depth;
}

/** The most elements an array, or members an object, of a request body may hold. */
export const MAX_JSON_ELEMENTS = 1_000;
/** The most values (numbers, strings, arrays, objects…) a request body may hold in all. */
export const MAX_JSON_VALUES = 10_000;

export interface JsonShape {
  readonly depth: number;
  /** The first array or object past `MAX_JSON_ELEMENTS` (its pointer), or the body (`''`) past `MAX_JSON_VALUES`. */
  readonly oversize?: { readonly pointer: string; readonly detail: string };
}

/** One array or object open at a point of the scan. */
interface Frame {
  array: boolean;
  /** Elements (or members) seen, counting the one being read. */
  count: number;
  /** An object's member being read: where its name's string starts and ends in the text. */
  key: [number, number] | undefined;
}

/**
 * The shape of `text`, in one pass without recursion or parsing: a 1 MiB body of 349,000 elements is refused before
 * JSON.parse makes 349,000 objects. It stops at the first limit passed (`whole`: reads on, for the exact nesting).
 */
export function scanJson(text: string, whole = false): JsonShape {
  // The open arrays and objects (frames[0..open)), as deep as the nesting limit; a frame is reused when its depth
  // opens again, so that small objects cost no allocation each.
  const frames: Frame[] = [];
  let open = 0;
  let depth = 0;
  let deepest = 0;
  // The values seen: every array, object and scalar (a comma or an opening bracket starts one).
  let values = 1;
  let oversize: JsonShape['oversize'];
  for (let i = 0; i < text.length; i += 1) {
    // One switch per character: this runs over every byte of every body (up to 1 MiB).
    switch (text.charCodeAt(i)) {
      case QUOTE: {
        const end = stringEnd(text, i);
        const frame = depth === open ? frames[open - 1] : undefined;
        // A member's name: a string in an object before its ":".
        if (frame !== undefined && !frame.array && text.charCodeAt(afterBlanks(text, end + 1)) === COLON)
          frame.key = [i, end + 1];
        i = end;
        break;
      }
      case OPEN_ARRAY:
      case OPEN_OBJECT:
        values += 1;
        depth += 1;
        if (depth > deepest) deepest = depth;
        if (depth === open + 1 && depth <= MAX_JSON_DEPTH) {
          const array = text.charCodeAt(i) === OPEN_ARRAY;
          const reused = frames[open];
          if (reused === undefined) frames.push({ array, count: 0, key: undefined });
          else {
            reused.array = array;
            reused.count = 0;
            reused.key = undefined;
          }
          open += 1;
        }
        break;
      case CLOSE_ARRAY:
      case CLOSE_OBJECT:
        if (depth > 0) depth -= 1;
        if (open > depth) open -= 1;
        break;
      case COMMA: {
        values += 1;
        const frame = depth === open ? frames[open - 1] : undefined;
        if (frame !== undefined && ++frame.count >= MAX_JSON_ELEMENTS && oversize === undefined)
          oversize = {
            pointer: pointerOf(text, frames.slice(0, open - 1)),
            detail:
              `holds more than ${MAX_JSON_ELEMENTS} ${frame.array ? 'elements' : 'members'}, ` +
              'the most any array or object of a request body may',
          };
        break;
      }
    }
    if (values > MAX_JSON_VALUES && oversize === undefined)
      oversize = { pointer: '', detail: `holds more than ${MAX_JSON_VALUES} values, the most a request body may` };
    // The first limit passed decides; the rest of the text is not read (unless `whole`: jsonNesting()).
    if (!whole && (oversize !== undefined || deepest > MAX_JSON_DEPTH)) break;
  }
  return oversize === undefined ? { depth: deepest } : { depth: deepest, oversize };
}

/** The JSON Pointer of the value the open `frames` lead to: each array's element index, each object's member. */
function pointerOf(text: string, frames: readonly Frame[]): string {
  return jsonPointer(
    frames.map((frame) =>
      frame.array ? frame.count : frame.key === undefined ? '' : JSON.parse(text.slice(...frame.key)),
    ),
  );
}

/**
 * The source text of the top-level member `name`'s value as the client wrote it (`24.999999999999999`, not a float:
 * an amount is compared as written, contract §4); of repeated members the last, as JSON.parse takes them.
 */
export function memberSource(body: Uint8Array | string, name: string): string | undefined {
  const text = typeof body === 'string' ? body : new TextDecoder().decode(body);
  let depth = 0;
  let found: string | undefined;
  for (let i = 0; i < text.length; i += 1) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      const end = stringEnd(text, i);
      // A key of the top-level object: a string at depth 1 followed by ":".
      const colon = afterBlanks(text, end + 1);
      if (depth === 1 && text.charCodeAt(colon) === COLON && JSON.parse(text.slice(i, end + 1)) === name) {
        const start = colon + 1;
        const stop = valueEnd(text, start);
        found = text.slice(start, stop).trim();
        i = stop - 1;
        continue;
      }
      i = end;
    } else if (OPEN.has(c)) depth += 1;
    else if (CLOSE.has(c)) depth -= 1;
  }
  return found;
}

/** The index of the first character at or after `start` that is not JSON whitespace (RFC 8259 §2). */
function afterBlanks(text: string, start: number): number {
  let i = start;
  while (i < text.length && BLANKS.has(text.charCodeAt(i))) i += 1;
  return i;
}

/** The index of the quote that closes the string whose opening quote is at `start`. */
export function stringEnd(text: string, start: number): number {
  for (let i = start + 1; i < text.length; i += 1) {
    const c = text.charCodeAt(i);
    if (c === BACKSLASH) i += 1;
    else if (c === QUOTE) return i;
  }
  return text.length;
}

/** Where the value that starts at `start` ends: the "," or "}" that closes it at its own level. */
function valueEnd(text: string, start: number): number {
  let depth = 0;
  for (let i = start; i < text.length; i += 1) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) i = stringEnd(text, i);
    else if (OPEN.has(c)) depth += 1;
    else if (CLOSE.has(c)) {
      if (depth === 0) return i;
      depth -= 1;
    } else if (c === COMMA && depth === 0) return i;
  }
  return text.length;
}
