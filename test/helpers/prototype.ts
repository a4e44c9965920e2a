/**
 * Prototype-pollution probes for the model-input tests: what a tool's naive
 * deep merge does with an own `__proto__` key, and how to see (and undo) what reached
 * `Object.prototype`.
 */

const PROTO_KEYS = Object.getOwnPropertyNames(Object.prototype);

/** Removes and returns every property added to `Object.prototype` since this module loaded, so one failure does not cascade. */
export function cleanPrototype(): string[] {
  const added = Object.getOwnPropertyNames(Object.prototype).filter((k) => !PROTO_KEYS.includes(k));
  for (const k of added) delete (Object.prototype as Record<string, unknown>)[k];
  return added;
}

/** A naive deep merge, as tools write them: `for…in` and recursion, no key checks. */
export function naiveMerge(target: Record<string, any>, source: Record<string, any>): Record<string, any> {
  for (const key in source) {
    const value = source[key];
    if (typeof value === 'object' && value !== null) {
      if (typeof target[key] !== 'object' || target[key] === null) target[key] = {};
      naiveMerge(target[key], value);
    } else {
      target[key] = value;
    }
  }
  return target;
}
