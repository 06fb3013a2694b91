// The JSON-RPC dialects' hottest reads and builds, as `value.rs` hands them to the core's codecs: each in one
// step, where reading or building them field by field from wasm stepped into JS about ten times a message.
// What they read and build is the codecs' (src/core/dialect/jsonrpc.rs and mcp.rs), checked against them in
// src/core/tests/fastpath.rs.

import { field, isRecord, jsonString, kindOf } from './value.js';

/** Which of `rpcHead`'s values are there, as bits of its `read` argument (whose bits from the fifth up are
 *  the message's kind). */
const ID = 1;
const PARAMS = 2;
const RESULT = 4;
const ERROR = 8;

/** Reads what the JSON-RPC dialects read first of a message `m`, and hands it to `sink(read, id, key, version,
 *  method, params, result, error)`: `read >> 4` is `kindOf(m)`, and only an object is read further; the low
 *  bits of `read` say which of `id` (unless null), `params` (an object), `result` and `error` (an object) it
 *  has; `key` is the id as a string key when it is a string or an integer (in decimal), else undefined;
 *  `version` whether `jsonrpc` is '2.0'; `method` a string or undefined. Messages are data from the wire
 *  (structured clones or parsed JSON), but a throwing getter still reads as missing. */
export function rpcHead(m, sink) {
  const kind = kindOf(m);
  if (kind !== 6) {
    sink(kind << 4, undefined, undefined, false, undefined, undefined, undefined, undefined);
    return;
  }
  const id = field(m, 'id');
  const params = field(m, 'params');
  const result = field(m, 'result');
  const error = field(m, 'error');
  const method = field(m, 'method');
  const hasId = id !== undefined && id !== null;
  const read = (kind << 4) | (hasId ? ID : 0) | (isRecord(params) ? PARAMS : 0) | (result !== undefined ? RESULT : 0)
    | (isRecord(error) ? ERROR : 0);
  const key = typeof id === 'string' ? id : Number.isInteger(id) && Math.abs(id) < 1e15 ? String(id) : undefined;
  sink(read, hasId ? id : undefined, key, field(m, 'jsonrpc') === '2.0', typeof method === 'string' ? method : undefined,
    params, result, error);
}

/** A handler's value as a `CallToolResult`: itself when it has a `content` array, else `{ content: [{ type:
 *  'text', text: <its JSON> }], structuredContent }` (`structuredContent` only for a plain object). */
export function toolResult(data) {
  const object = isRecord(data);
  if (object && Array.isArray(field(data, 'content'))) return data;
  const content = [{ type: 'text', text: jsonString(data) }];
  return object ? { content, structuredContent: data } : { content };
}

/** A `CallToolResult` that is not an error (`isError: true`) as an `ABPResponse`: `{ success: true, data,
 *  callId }`, `data` its `structuredContent` when it has one, else the whole result. Undefined for an error
 *  result, which the codec reads. */
export function toolSuccess(result, callId) {
  if (field(result, 'isError') === true) return undefined;
  const structured = field(result, 'structuredContent');
  return { success: true, data: structured === undefined ? result : structured, callId };
}
