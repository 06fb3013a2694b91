import { resolve } from 'node:path';
import { defineConfig } from 'vite';
import abp from 'abp-wasm/vite';

export default defineConfig({
  base: './',
  // abp-wasm's plugin: the dev server serves the package's wasm wherever npm put it, and the ABP bootstrap goes
  // first in the app page's <head> (window.abp before the wasm has loaded).
  plugins: [abp({ pages: ['app.html'] })],
  build: {
    target: 'es2022',
    rollupOptions: { input: { host: resolve(import.meta.dirname, 'index.html'), app: resolve(import.meta.dirname, 'app.html'),
      full: resolve(import.meta.dirname, 'full.html') } },
  },
});
