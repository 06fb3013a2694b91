/* ABP bootstrap (abp-wasm): put this classic script in the page's <head>, before anything else loads. It
   defines a placeholder window.abp whose methods wait until the SDK's app.exposeGlobal() replaces it, so an
   automation agent that calls window.abp.initialize(...) right after navigation is answered once the
   WebAssembly has loaded. exposeGlobal() calls window.__abpReadyResolve(). */
(function () {
  if (window.abp) return;
  var ready = new Promise(function (resolve) { window.__abpReadyResolve = resolve; });
  function later(name) {
    return function () {
      var args = arguments;
      return ready.then(function (abp) { return abp[name].apply(abp, args); });
    };
  }
  function registrar(name) {
    return function (callback) {
      var off = null, gone = false;
      ready.then(function (abp) { if (!gone) off = abp[name](callback); });
      return function () { gone = true; if (off) off(); };
    };
  }
  window.abp = {
    protocolVersion: '0.1',
    app: null,
    initialized: false,
    sessionId: null,
    initialize: later('initialize'),
    shutdown: later('shutdown'),
    call: later('call'),
    cancel: later('cancel'),
    listCapabilities: later('listCapabilities'),
    describeCapability: later('describeCapability'),
    supports: later('supports'),
    notify: later('notify'),
    notifyProgress: later('notifyProgress'),
    elicit: later('elicit'),
    onProgress: registrar('onProgress'),
    onNotification: registrar('onNotification'),
    onElicitation: registrar('onElicitation'),
    onCapabilitiesChanged: registrar('onCapabilitiesChanged')
  };
})();
