# Sourced by the scripts that run `wasm-pack test`: fixes the address wasm-bindgen-test-runner serves its page on
# (WASM_BINDGEN_TEST_ADDRESS, unless already set) and keeps that server answering while the sourcing script runs
# (scripts/nudge-runner.mjs says why).
if [ -z "${WASM_BINDGEN_TEST_ADDRESS:-}" ]; then
  WASM_BINDGEN_TEST_ADDRESS="127.0.0.1:$(node -e "const s=require('net').createServer().listen(0,'127.0.0.1',()=>{console.log(s.address().port);s.close()})")"
  export WASM_BINDGEN_TEST_ADDRESS
fi
node scripts/nudge-runner.mjs "$WASM_BINDGEN_TEST_ADDRESS" "$$" &
