// Records every module a child process loads: a module hook appending each ES module it
// resolves (hooks run off the main thread: a file), and a preload appending the CommonJS module
// cache (which require(esm) fills too) at exit. The bundle tests use it to show what a command
// loads of ours and of node_modules.
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

export interface ModuleLog {
  /** The log file (remove it to start a new record). */
  file: string;
  /** NODE_OPTIONS for the child whose modules are recorded. */
  nodeOptions: string;
  /** Every module recorded so far, relative to the repository where inside it (the recorder's own files left out). */
  loaded(): Promise<string[]>;
}

/** Writes the recorder's files into `dir` (a directory of the test's own). */
export async function moduleLog(dir: string): Promise<ModuleLog> {
  const log = join(dir, 'modules.log');
  await writeFile(
    join(dir, 'hooks.mjs'),
    `import { appendFileSync } from 'node:fs';
    export async function resolve(specifier, context, next) {
      const result = await next(specifier, context);
      appendFileSync(${JSON.stringify(log)}, result.url + '\\n');
      return result;
    }\n`,
  );
  await writeFile(join(dir, 'register.mjs'), `import { register } from 'node:module';\nregister(${JSON.stringify(pathToFileURL(join(dir, 'hooks.mjs')).href)});\n`);
  await writeFile(join(dir, 'cache.cjs'), `process.on('exit', () => require('node:fs').appendFileSync(${JSON.stringify(log)}, Object.keys(require.cache).join('\\n') + '\\n'));\n`);
  return {
    file: log,
    nodeOptions: `--import=${join(dir, 'register.mjs')} --require=${join(dir, 'cache.cjs')}`,
    loaded: async () =>
      (await readFile(log, 'utf8'))
        .trim()
        .split('\n')
        .filter((entry) => entry.startsWith('file:') || entry.startsWith('/'))
        .map((entry) => (entry.startsWith('file:') ? fileURLToPath(entry) : entry))
        .filter((path) => !path.startsWith(join(dir, '/')))
        .map((path) => (path.startsWith(ROOT) ? path.slice(ROOT.length) : path)),
  };
}
