/** JSON Pointers (RFC 6901): where in a request body a problem lies. */

/** RFC 6901: the pointer to `path`, with `~` and `/` escaped. */
export function jsonPointer(path: readonly (string | number)[]): string {
  return path.map((key) => `/${String(key).replace(/~/g, '~0').replace(/\//g, '~1')}`).join('');
}
