// How a benchmark page that runs without a test driver (bench/direct.mjs) answers: it was opened with
// `?report=<token>`, and POSTs its figures, or the error that stopped it, back to the bench server.

/** The token this page reports under; null when it was not opened to report (e.g. under Playwright). */
export const reportTo = new URLSearchParams(location.search).get('report');

/** POSTs `body` as this page's report (as JSON); does nothing on a page not opened to report. */
export function report(body) {
  if (reportTo === null) return Promise.resolve();
  return fetch(`/bench/result?report=${encodeURIComponent(reportTo)}`, { method: 'POST', body: JSON.stringify(body) });
}

/** Reports an uncaught error (one that stops the page's own script before it can report) as `{ error }`;
 *  `rejections`: an unhandled promise rejection too (a page whose work runs in callbacks after it reported). */
export function reportErrors({ rejections = false } = {}) {
  addEventListener('error', (e) => report({ error: String(e.error?.stack ?? e.message) }));
  if (rejections) addEventListener('unhandledrejection', (e) => report({ error: String(e.reason?.stack ?? e.reason) }));
}
