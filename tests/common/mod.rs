//! What the browser test files share: running one JavaScript case and failing the Rust test with its message.

use wasm_bindgen::prelude::*;

#[wasm_bindgen(module = "/tests/js/helpers.js")]
extern "C" {
    /// Referenced so that wasm-bindgen ships `helpers.js` next to the case files that import it.
    #[wasm_bindgen(js_name = helpersLoaded)]
    fn helpers_loaded() -> bool;
}

/// Fails the test with the JS error's message and stack, if the case failed.
pub fn report(result: Result<JsValue, JsValue>) {
    assert!(helpers_loaded(), "tests/js/helpers.js did not load");
    if let Err(e) = result {
        let stack = js_sys::Reflect::get(&e, &"stack".into())
            .ok()
            .and_then(|s| s.as_string())
            .unwrap_or_default();
        panic!(
            "{}\n{}",
            e.as_string().unwrap_or_else(|| format!("{e:?}")),
            stack
        );
    }
}
