// The MCP-B envelope (@mcp-b/transports), as `link/mcpb.rs` frames window messages with it:
// { channel, type: 'mcp', direction, payload }.

/** `payload` in the MCP-B envelope of `channel`, going `direction`. */
export function mcpbWrap(channel, direction, payload) {
  return { channel, type: 'mcp', direction, payload };
}

/** The payload of `data` if it is an MCP-B envelope of `channel` going `direction`, else undefined. */
export function mcpbPayload(data, channel, direction) {
  if (data === null || typeof data !== 'object') return undefined;
  try {
    if (data.channel !== channel || data.type !== 'mcp' || data.direction !== direction) return undefined;
    return data.payload;
  } catch (_) {
    return undefined;
  }
}
