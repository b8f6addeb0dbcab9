/** Lazy stand-ins for web-standard classes, which build the real undici object only when the rest is reached for. */

/** What a stand-in provides: the real object, built on first use. */
interface StandIn {
  real(): object;
}

/**
 * Makes instances of `lazy` whole `real`s (`instanceof` holds): each member of `real.prototype` that `lazy` does not
 * define, and not one of the instance `fields`, reads its `real()`. Member by member, so it follows what undici adds.
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
