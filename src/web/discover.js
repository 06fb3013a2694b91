// discover()'s JSON parsing: the browser parses manifests, so the wasm carries no JSON parser. A snippet of its
// own, so a build without the `discovery` feature does not ship it.

// A `\uD800`–`\uDFFF` escape in JSON text, and half a surrogate pair in a parsed string.
const SURROGATE_ESCAPE = /\\u[dD][89a-fA-F]/;
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

function wellFormed(key, value) {
  if (LONE_SURROGATE.test(key) || (typeof value === 'string' && LONE_SURROGATE.test(value))) {
    throw new SyntaxError('a string escapes half of a UTF-16 surrogate pair');
  }
  return value;
}

/** A manifest's bytes as JSON: UTF-8 (`fatal`: bad UTF-8 is an error; `ignoreBOM`: the core removed one BOM,
 *  another is refused as JSON.parse refuses it), then `JSON.parse`, refusing strings with half a surrogate pair
 *  (`"\uD800"`) as serde_json does natively (they could not become Rust strings unchanged). Throws a string
 *  saying what is wrong (also when the parser runs out of stack, a RangeError). */
export function parseJson(bytes) {
  let text;
  try {
    text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(bytes);
  } catch (_) {
    throw 'it is not UTF-8 text';
  }
  try {
    return JSON.parse(text, SURROGATE_ESCAPE.test(text) ? wellFormed : undefined);
  } catch (e) {
    throw e instanceof Error ? e.message : 'unreadable';
  }
}
