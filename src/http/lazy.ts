/**
 * Lazy stand-ins for web-standard classes (the bridge's `IncomingRequest`,
 * `BufferedResponse`): objects that answer their cheap parts themselves and
 * build the real undici object only when something reaches for the rest.
 */

/** What a stand-in provides: the real object, built on first use. */
interface StandIn {
  real(): object;
}

/**
 * Makes instances of `lazy` whole `real`s: its prototype chains to
 * `real.prototype` (so `instanceof` holds), and every member of
 * `real.prototype` that `lazy` does not define itself, and that is not one of
 * `fields` (set on each instance by its constructor), reads the object its
 * `real()` builds. Done member by member, so it follows whatever Node's
 * undici adds (`bytes()` in newer releases).
 */
export function delegateToReal(
  lazy: { readonly prototype: StandIn },
  real: { readonly prototype: object },
  fields: readonly string[],
): void {
  Object.setPrototypeOf(lazy.prototype, real.prototype);
  for (const name of Object.getOwnPropertyNames(real.prototype)) {
    if (name === 'constructor' || Object.hasOwn(lazy.prototype, name) || fields.includes(name)) continue;
    const descriptor = Object.getOwnPropertyDescriptor(real.prototype, name) as PropertyDescriptor;
    if (descriptor.get !== undefined) {
      Object.defineProperty(lazy.prototype, name, {
        configurable: true,
        get(this: StandIn) {
          return Reflect.get(real.prototype, name, this.real());
        },
      });
    } else if (typeof descriptor.value === 'function') {
      const method = descriptor.value as (...args: unknown[]) => unknown;
      Object.defineProperty(lazy.prototype, name, {
        configurable: true,
        writable: true,
        value(this: StandIn, ...args: unknown[]) {
          return method.apply(this.real(), args);
        },
      });
    }
  }
}
