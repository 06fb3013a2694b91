import { resolve } from 'node:path';
import { defineConfig } from 'vite';
import abpBootstrap from 'abp-wasm/vite';

export default defineConfig({
  base: './',
  // The ABP bootstrap, first in the app page's <head> (window.abp before the wasm has loaded).
  plugins: [abpBootstrap({ pages: ['app.html'] })],
  build: {
    target: 'es2022',
    rollupOptions: { input: { host: resolve(import.meta.dirname, 'index.html'), app: resolve(import.meta.dirname, 'app.html'),
      full: resolve(import.meta.dirname, 'full.html') } },
  },
});
