// WebSocket frames, as `link/socket.rs` sends and reads them: JSON text, with binary values as ABP BinaryData
// (base64).

import { errorWithCode, isRecord, toStr } from '../value.js';

function toBase64(bytes) {
  if (typeof bytes.toBase64 === 'function') return bytes.toBase64();
  let s = '';
  for (let i = 0; i < bytes.length; i += 0x8000) {
    s += String.fromCharCode.apply(null, bytes.subarray(i, i + 0x8000));
  }
  return btoa(s);
}

function fromBase64(text) {
  if (typeof Uint8Array.fromBase64 === 'function') return Uint8Array.fromBase64(text);
  const s = atob(text);
  const out = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) out[i] = s.charCodeAt(i);
  return out;
}

function binaryData(bytes) {
  return { content: toBase64(bytes), encoding: 'base64', mimeType: 'application/octet-stream', size: bytes.length };
}

/** The bytes of an ArrayBuffer or a view (only the view's own bytes), else undefined. */
function bytesOf(value) {
  if (value instanceof ArrayBuffer) return new Uint8Array(value);
  if (ArrayBuffer.isView(value)) return new Uint8Array(value.buffer, value.byteOffset, value.byteLength);
  return undefined;
}

/** JSON.stringify replacer: raw bytes become BinaryData; a BinaryData whose `content` is bytes keeps its
 *  other fields (mimeType, filename, …) with the content as base64. */
function encodeBinary(_key, value) {
  const bytes = bytesOf(value);
  if (bytes) return binaryData(bytes);
  if (typeof Blob !== 'undefined' && value instanceof Blob) {
    throw errorWithCode('INVALID_PARAMS', 'A Blob cannot travel over WebSocket; send await blob.arrayBuffer() instead');
  }
  if (isRecord(value) && typeof value.mimeType === 'string') {
    const content = bytesOf(value.content);
    if (content) return Object.assign({}, value, { content: toBase64(content), encoding: 'base64', size: content.length });
  }
  return value;
}

/** Exactly what `binaryData` makes: nothing the sender said beyond "these bytes". */
function isRawBytes(v) {
  return v.mimeType === 'application/octet-stream' && typeof v.size === 'number' && Object.keys(v).length === 4;
}

/** JSON.parse reviver: BinaryData (base64 content, a mimeType, a size matching the bytes if given) is decoded.
 *  The exact shape `binaryData` makes becomes an ArrayBuffer; any other BinaryData stays an object with its
 *  `content` as an ArrayBuffer (and no `encoding`). Anything that does not decode (a look-alike) is left as it is. */
function decodeBinary(_key, v) {
  if (isRecord(v) && v.encoding === 'base64' && typeof v.content === 'string' && typeof v.mimeType === 'string'
      && (v.size === undefined || typeof v.size === 'number')) {
    let bytes;
    try {
      bytes = fromBase64(v.content);
    } catch (_) {
      return v; // not base64 after all
    }
    if (v.size !== undefined && bytes.length !== v.size) return v;
    if (isRawBytes(v)) return bytes.buffer;
    const out = Object.assign({}, v, { content: bytes.buffer });
    delete out.encoding; // it described the base64 text, which is gone
    return out;
  }
  return v;
}

let utf8;

function utf8Length(text) {
  utf8 = utf8 || new TextEncoder();
  return utf8.encode(text).length;
}

/** Over `max` UTF-8 bytes? Exact only when it could matter (one UTF-16 unit is 1 to 3 bytes). */
function tooLarge(text, max) {
  return text.length > max || (text.length * 3 > max && utf8Length(text) > max);
}

/** A message as one text frame. Throws (an Error with `code`) if it cannot be written or is over `max` bytes. */
export function wsEncode(msg, max) {
  let text;
  try {
    text = JSON.stringify(msg, encodeBinary);
  } catch (e) {
    if (e && e.code) throw e;
    throw errorWithCode('INVALID_PARAMS', 'The message cannot be written as JSON: ' + toStr(e));
  }
  if (tooLarge(text, max)) {
    throw errorWithCode('TRANSPORT_ERROR', 'The message is ' + utf8Length(text) + ' bytes, over maxMessageBytes ('
      + max + '); send less per call or raise maxMessageBytes on both sides');
  }
  return text;
}

/** A received frame as a message, or undefined for anything that is not JSON text within `max` bytes. */
export function wsDecode(data, max) {
  if (typeof data !== 'string' || tooLarge(data, max)) return undefined;
  try {
    return data.indexOf('"base64"') >= 0 ? JSON.parse(data, decodeBinary) : JSON.parse(data);
  } catch (_) {
    return undefined;
  }
}

const LOOPBACK = /^(localhost|.+\.localhost|127(\.\d{1,3}){3}|\[::1\])$/i;
const LOCAL = /^(10(\.\d{1,3}){3}|192\.168(\.\d{1,3}){2}|172\.(1[6-9]|2\d|3[01])(\.\d{1,3}){2}|169\.254(\.\d{1,3}){2}|\[f[cd][0-9a-f:.]*\]|\[fe80:[0-9a-f:.]*\]|.+\.local)$/i;

/** How private a host name is: 2 this device, 1 the local network, 0 public (as far as the name tells). */
function addressSpace(host) {
  return LOOPBACK.test(host) ? 2 : LOCAL.test(host) ? 1 : 0;
}

/** Whether the browser rather than the server may have stopped a socket to `url`, and what to do then; '' when
 *  it cannot have. Chromium's Local Network Access lets a page on a public address (or a local one, towards this
 *  device) open a connection to a more private one only from a secure context, in a frame only where its embedder
 *  allows it (`allow="loopback-network"`), and only once the user granted the permission of that name. Browsers
 *  do not tell a page why a socket failed, so this reads what they do tell: the addresses' names, the frame's
 *  permissions policy and the permission's state. */
export async function wsBlockedBy(url) {
  let target;
  try {
    target = addressSpace(new URL(url).hostname);
  } catch (_) {
    return '';
  }
  if (target <= addressSpace(location.hostname)) return '';
  const wanted = target === 2 ? 'loopback-network' : 'local-network';
  const policy = typeof document === 'object' ? document.featurePolicy : undefined;
  const known = policy ? policy.features() : [wanted];
  // Chromium before the permission was split in two called both `local-network-access`.
  const name = known.includes(wanted) ? wanted : known.includes('local-network-access') ? 'local-network-access' : '';
  if (!name) return '';
  let fix;
  if (!isSecureContext) {
    fix = 'a page may ask for that only from a secure context: serve it over https';
  } else if (policy && !policy.allowsFeature(name)) {
    fix = 'this frame may not ask for it: its embedder must allow it (<iframe allow="' + name + '">)';
  } else {
    let state;
    try {
      state = (await navigator.permissions.query({ name })).state;
    } catch (_) {
      return '';
    }
    if (state === 'granted') return '';
    fix = 'the user must allow it when the browser asks (the "' + name + '" permission is ' + state
      + (state === 'denied' ? '; the site settings change that' : '') + ')';
  }
  return 'the browser blocked it (Local Network Access: a page on a public address reaches '
    + (target === 2 ? "this device's own address" : 'the local network') + ' only with the user\'s permission); '
    + fix + '. An app that needs no local connection joins a gateway on a public wss:// address instead';
}
