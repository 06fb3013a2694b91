// The browser app behind `abp-peer mcp --http` while the official MCP conformance suite
// (`@modelcontextprotocol/conformance`, scripts/mcp-conformance.sh) tests the gateway as a server: the tools its
// scenarios call, with the results they expect. A handler that returns an MCP-shaped `{ content: [...] }` has it
// passed through as the tool's result; one that returns `isError: true` with it is a tool error. The page serves
// until the script calls `conformance_done`.
import { AbpApp, WebSocketTransport } from '/wasm-bindgen-test';
import { pageErrors, sleep } from './helpers.js';

// A 1×1 PNG and a short WAV, as base64.
const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==';
const WAV = 'UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQAAAAA=';
const text = (t) => ({ type: 'text', text: t });
const image = { type: 'image', data: PNG, mimeType: 'image/png' };
const resource = { type: 'resource', resource: { uri: 'test://embedded-resource', mimeType: 'text/plain',
  text: 'This is an embedded resource content.' } };
const none = { type: 'object', properties: {} };

export async function serveTheConformanceSuite(url) {
  let done;
  const finished = new Promise((r) => { done = r; });
  const app = new AbpApp({ id: 'com.example.conformance', name: 'MCP conformance app', version: '1.0.0' });
  const tool = (name, description, handler, inputSchema = none) => app.register(name, handler, { description, inputSchema });
  tool('test_simple_text', 'Returns simple text', () => ({ content: [text('This is a simple text response for testing.')] }));
  tool('test_image_content', 'Returns an image', () => ({ content: [image] }));
  tool('test_audio_content', 'Returns audio', () => ({ content: [{ type: 'audio', data: WAV, mimeType: 'audio/wav' }] }));
  tool('test_embedded_resource', 'Returns an embedded resource', () => ({ content: [resource] }));
  tool('test_multiple_content_types', 'Returns text, an image and a resource',
    () => ({ content: [text('Multiple content types test:'), image, resource] }));
  tool('test_error_handling', 'Always fails', () => ({ content: [text('This tool intentionally returns an error for testing')], isError: true }));
  tool('test_tool_with_progress', 'Reports progress 0, 50, 100', async (_params, ctx) => {
    for (const progress of [0, 50, 100]) {
      ctx.progress({ progress, total: 100, status: `Completed step ${progress / 50 + 1} of 3` });
      await sleep(50);
    }
    return { content: [text('Progress test completed')] };
  });
  tool('test_elicitation', 'Asks the user', async (params, ctx) => {
    const answer = await ctx.elicit({ method: 'elicitation/create', params: { message: params.message ?? 'Please answer',
      requestedSchema: { type: 'object', properties: { response: { type: 'string', description: 'your answer' } }, required: ['response'] } } });
    return { content: [text(`User response: ${JSON.stringify(answer?.data ?? answer)}`)] };
  }, { type: 'object', properties: { message: { type: 'string' } }, required: ['message'] });
  const ask = (message, properties) => async (_params, ctx) => {
    const answer = await ctx.elicit({ method: 'elicitation/create', params: { message, requestedSchema: { type: 'object', properties } } });
    return { content: [text(`Elicitation completed: ${JSON.stringify(answer?.data ?? answer)}`)] };
  };
  tool('test_elicitation_sep1034_defaults', 'Asks with a default for every primitive type', ask('Please review and update the form fields with defaults', {
    name: { type: 'string', description: 'User name', default: 'John Doe' },
    age: { type: 'integer', description: 'User age', default: 30 },
    score: { type: 'number', description: 'User score', default: 95.5 },
    status: { type: 'string', description: 'User status', enum: ['active', 'inactive', 'pending'], default: 'active' },
    verified: { type: 'boolean', description: 'Verification status', default: true },
  }));
  tool('test_elicitation_sep1330_enums', 'Asks with every kind of enum', ask('Please select options from the enum fields', {
    untitledSingle: { type: 'string', enum: ['option1', 'option2', 'option3'] },
    titledSingle: { type: 'string', oneOf: [{ const: 'value1', title: 'First Option' }, { const: 'value2', title: 'Second Option' }] },
    legacyEnum: { type: 'string', enum: ['opt1', 'opt2'], enumNames: ['Option One', 'Option Two'] },
    untitledMulti: { type: 'array', items: { type: 'string', enum: ['option1', 'option2'] } },
    titledMulti: { type: 'array', items: { anyOf: [{ const: 'value1', title: 'First Choice' }, { const: 'value2', title: 'Second Choice' }] } },
  }));
  // 2026-07-28: a question is an InputRequiredResult, never a request on the response stream; and a server sends
  // no log message to a request that did not set a level (this one never logs).
  tool('test_streaming_elicitation', 'Asks the user (the answer comes by the retry)', ask('Please confirm', {
    confirmed: { type: 'boolean', description: 'Confirm' },
  }));
  tool('test_logging_tool', 'Would log; logs nothing without a level', () => ({ content: [text('Logging tool completed')] }));
  // 2026-07-28's questions by retry (an InputRequiredResult under the key the suite expects; the retry's answer
  // resumes the handler).
  const question = (key, message) => ({ method: 'elicitation/create', key,
    params: { message, requestedSchema: { type: 'object', properties: { name: { type: 'string' }, ok: { type: 'boolean' } } } } });
  tool('test_input_required_result_elicitation', 'Asks for the user name', async (_p, ctx) => {
    const answer = await ctx.elicit(question('user_name', 'What is your name?'));
    return { content: [text(`Hello, ${JSON.stringify(answer?.data ?? answer)}`)] };
  });
  tool('test_input_required_result_request_state', 'Asks to confirm, with a request state', async (_p, ctx) => {
    await ctx.elicit(question('confirm', 'Please confirm to continue'));
    return { content: [text('state-ok')] };
  });
  tool('test_input_required_result_tampered_state', 'Asks, and refuses a tampered request state', async (_p, ctx) => {
    await ctx.elicit(question('confirm', 'Please confirm'));
    return { content: [text('state-ok')] };
  });
  tool('test_input_required_result_multi_round', 'Asks twice', async (_p, ctx) => {
    const first = await ctx.elicit(question('step1', 'Step 1'));
    const second = await ctx.elicit(question('step2', 'Step 2'));
    return { content: [text(`done: ${JSON.stringify([first?.data, second?.data])}`)] };
  });
  tool('test_input_required_result_capabilities', 'Asks only what the client said it can answer', async (_p, ctx) => {
    // A client that declared no elicitation is not asked: ctx.elicit resolves NOT_SUPPORTED.
    const answer = await ctx.elicit(question('user_context', 'Any context?'));
    return { content: [text(answer?.success === false ? `not asked: ${answer.error?.code}` : 'asked')] };
  });
  // A parameter mirrored into a header (`x-mcp-header`): the gateway checks `Mcp-Param-Region` against it.
  tool('test_custom_header', 'Echoes its region, which hosts send as the Mcp-Param-Region header too',
    (params) => ({ content: [text(`region: ${params.region}`)] }),
    { type: 'object', properties: { region: { type: 'string', 'x-mcp-header': 'Region' }, query: { type: 'string' } } });
  // A JSON Schema 2020-12 input schema ($defs, $ref, allOf/anyOf, if/then/else) reaches the host as the app wrote it.
  tool('json_schema_2020_12_tool', 'Takes a contact whose schema uses JSON Schema 2020-12 keywords', () => ({ content: [text('ok')] }), {
    $schema: 'https://json-schema.org/draft/2020-12/schema',
    type: 'object',
    $defs: { address: { $anchor: 'addressDef', type: 'object', properties: { street: { type: 'string' }, city: { type: 'string' } } } },
    properties: {
      name: { type: 'string' }, address: { $ref: '#/$defs/address' },
      contactMethod: { type: 'string', enum: ['phone', 'email'] }, phone: { type: 'string' }, email: { type: 'string' },
    },
    allOf: [{ anyOf: [{ required: ['phone'] }, { required: ['email'] }] }],
    if: { properties: { contactMethod: { const: 'phone' } }, required: ['contactMethod'] },
    then: { required: ['phone'] },
    else: { required: ['email'] },
    additionalProperties: false,
  });
  // The tasks extension's scenarios (abp-peer mcp runs a capability registered with `task` as an MCP task).
  tool('greet', 'Greets by name, at once (never a task)', ({ name }) => ({ content: [text(`Hello, ${name}!`)] }),
    { type: 'object', properties: { name: { type: 'string' } } });
  const abortable = (ms, signal) => new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => { clearTimeout(timer); reject(signal.reason); });
  });
  app.register('slow_compute', async ({ seconds = 0, label = '' }, ctx) => {
    await abortable(seconds * 1000, ctx.signal);
    return { content: [text(`computed ${label} in ${seconds} s`)] };
  }, { description: 'Computes for a number of seconds (a task when the host takes one)', task: 'optional',
    inputSchema: { type: 'object', properties: { seconds: { type: 'number' }, label: { type: 'string' } } } });
  app.register('failing_job', async (_p, ctx) => {
    await abortable(1000, ctx.signal);
    return { content: [text('the job failed')], isError: true };
  }, { description: 'Fails as a tool after a second (only as a task)', task: 'required', inputSchema: none });
  app.register('protocol_error_job', async () => {
    throw { code: 'INVALID_PARAMS', message: 'the job cannot take these arguments' };
  }, { description: 'Fails with a protocol error (a task)', task: 'optional', inputSchema: none });
  const yesNo = (key, message) => ({ method: 'elicitation/create', key,
    params: { message, requestedSchema: { type: 'object', properties: { confirm: { type: 'boolean' }, name: { type: 'string' } } } } });
  app.register('confirm_delete', async ({ filename }, ctx) => {
    const answer = await ctx.elicit(yesNo('confirm', `Delete ${filename}?`));
    return { content: [text(answer?.data?.confirm ? `deleted ${filename}` : `kept ${filename}`)] };
  }, { description: 'Deletes a file once the user confirms (a task)', task: 'optional',
    inputSchema: { type: 'object', properties: { filename: { type: 'string' } } } });
  app.register('multi_input', async (_p, ctx) => {
    const answers = await Promise.all([ctx.elicit(yesNo('first', 'First?')), ctx.elicit(yesNo('second', 'Second?'))]);
    return { content: [text(`got ${answers.map((a) => a?.data?.name).join(', ')}`)] };
  }, { description: 'Asks two questions at once (a task)', task: 'required', inputSchema: none });
  // Each trigger adds a tool of its own: registering the same tool again changes nothing, so no listen hears it
  // (the suite triggers a change from three listens).
  let added = 0;
  tool('test_trigger_tool_change', 'Registers one more tool (list_changed on a listen)', () => {
    added += 1;
    app.register(`test_added_tool_${added}`, () => ({ content: [text('added')] }), { description: 'Added at run time', inputSchema: none });
    return { content: [text('tool list changed')] };
  });
  tool('conformance_done', 'Ends the page (called by scripts/mcp-conformance.sh)', () => {
    setTimeout(done, 50);
    return { content: [text('bye')] };
  });
  app.listen(await WebSocketTransport.connect(url, { reconnect: true }));
  await finished;
  app.close();
  if (pageErrors.length) throw new Error(`page errors: ${pageErrors.join('; ')}`);
  return 'served';
}
