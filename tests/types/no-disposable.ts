// Compiled by tsconfig.json only, whose lib is the default one of its target (no `esnext.disposable`): the
// package's typings compile there, and declare no `Symbol.dispose` for a program whose lib does not have it
// (the generated JS adds `[Symbol.dispose]()` only where the runtime has `Symbol.dispose`).
import { AbpApp } from '../../pkg/abp_wasm.js';

export function dispose(app: AbpApp): void {
  // @ts-expect-error: Symbol.dispose is not in this program's lib, and the package must not add it.
  app[Symbol.dispose]();
  app.free();
}
