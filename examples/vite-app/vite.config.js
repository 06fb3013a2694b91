import { resolve } from 'node:path';
import { defineConfig } from 'vite';

export default defineConfig({
  base: './',
  build: {
    target: 'es2022',
    rollupOptions: { input: { host: resolve(import.meta.dirname, 'index.html'), app: resolve(import.meta.dirname, 'app.html'),
      full: resolve(import.meta.dirname, 'full.html') } },
  },
});
