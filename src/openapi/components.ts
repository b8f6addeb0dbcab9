/**
 * The document's shared objects: a response, parameter or header field used by several operations is written once
 * in `components`, under a name made of what sets it apart, and each use is a `$ref` to it. One name is one
 * content: the same name built with different content is refused at start-up.
 */
import { OpenApiError } from './errors.ts';

type Json = Record<string, unknown>;

export type ComponentKind = 'responses' | 'parameters' | 'headers';

export interface Components {
  /** A `$ref` to `value` under `name` in `components.<kind>`, where it is written once. */
  ref(kind: ComponentKind, name: string, value: Json): Json;
  /** Each kind's entries, by name in alphabetical order: only those some `ref()` asked for. */
  sections(): Record<ComponentKind, Record<string, Json>>;
}

/** OpenAPI 3.1 §4.8.7: the names `components` allows. */
const NAME = /^[a-zA-Z0-9.\-_]+$/;

/** An empty set of components for one document. */
export function createComponents(): Components {
  const entries: Record<ComponentKind, Map<string, { readonly json: string; readonly value: Json }>> = {
    responses: new Map(),
    parameters: new Map(),
    headers: new Map(),
  };
  return {
    ref(kind, name, value) {
      if (!NAME.test(name)) throw new OpenApiError(`${name} cannot name an entry of components.${kind}`);
      const json = JSON.stringify(value);
      const known = entries[kind].get(name);
      if (known === undefined) entries[kind].set(name, { json, value });
      else if (known.json !== json) throw new OpenApiError(`two different components.${kind} are named ${name}`);
      return { $ref: `#/components/${kind}/${name}` };
    },
    sections() {
      const sorted = (kind: ComponentKind) =>
        Object.fromEntries([...entries[kind]].sort(([a], [b]) => (a < b ? -1 : 1)).map(([n, e]) => [n, e.value]));
      return { responses: sorted('responses'), parameters: sorted('parameters'), headers: sorted('headers') };
    },
  };
}
