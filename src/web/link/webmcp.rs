//! `WebMCPTransport`: the page's own WebMCP tools as an app for `AbpClient`. The app is a small adapter in
//! JS on the far side of a `MessageChannel` (`webmcpPort`), so the client talks to it as to any ABP app.

use wasm_bindgen::prelude::*;

use super::target::PostMessageTransport;

#[wasm_bindgen(module = "/src/web/link/webmcp.js")]
extern "C" {
    /// `WebMCPTransport.document()`'s port (see webmcp.js).
    #[wasm_bindgen(catch, js_name = webmcpPort)]
    pub(crate) fn webmcp_port() -> Result<web_sys::MessagePort, JsValue>;
}

/// The page's own WebMCP tools (`document.modelContext`, native or the `@mcp-b/webmcp-polyfill`) as an app
/// for `AbpClient`: `AbpClient.connect(WebMCPTransport.document())`.
#[wasm_bindgen]
pub struct WebMCPTransport;

#[wasm_bindgen]
impl WebMCPTransport {
    /// A transport to the tools of this page's `document.modelContext` (those it registered and those exposed
    /// to it): `listCapabilities()` is `getTools()`, a call is `executeTool` with a signal that the caller's
    /// signal and timeout abort (CANCELLED and TIMEOUT as everywhere), an `isError` result is `{ success:
    /// false, error }`, and `toolchange` is `onCapabilitiesChanged`. Throws a TypeError on a page without
    /// `document.modelContext` and its `executeTool`.
    pub fn document() -> Result<PostMessageTransport, JsValue> {
        let port = webmcp_port()?;
        Ok(PostMessageTransport::from_port(&port))
    }
}
