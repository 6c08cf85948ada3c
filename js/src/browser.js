// The engine in a page, with no database: the pure functions the admin page and the spawn form
// compute with (a quota field, the price of a spawn, a refresh preview), by the same component
// code the server runs. `gen` is the URL where js/gen/ is served.
import { Engine } from './component.js';

export { ConfigError, EngineError, QuotaError } from './component.js';

/**
 * Loads and configures the engine in the page. `values`: the values document (the page gets it
 * from the server, or only the parts it needs: `custom.quota` and `custom.accelerators`).
 */
export async function loadEngine(gen, values) {
  const base = new URL(gen, document.baseURI);
  const names = await (await fetch(new URL('modules.json', base))).json();
  const compiled = await Promise.all(names.map((n) => WebAssembly.compileStreaming(fetch(new URL(n, base)))));
  const modules = new Map(names.map((n, i) => [n, compiled[i]]));
  const engine = new Engine({ getCoreModule: (path) => modules.get(path), db: null });
  engine.configure(values);
  return engine;
}
