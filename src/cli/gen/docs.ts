// `npm run gen:docs`: writes the completion scripts and the man page generated from the
// command tree into completions/ and man/. With --check it writes nothing and exits 1 when a
// checked-in file differs (the test suite runs that).
import { readFile, writeFile, mkdir } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildProgram } from '../program.js';
import { completionScript } from './completions.js';
import { manPage } from './man.js';
import { commandSpec } from './tree.js';

export const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

/** Generated files by path relative to the package root. */
export async function generatedDocs(): Promise<Record<string, string>> {
  const spec = commandSpec((await buildProgram()).program);
  return {
    'completions/panelctl.bash': completionScript(spec, 'bash'),
    'completions/_panelctl': completionScript(spec, 'zsh'),
    'completions/panelctl.fish': completionScript(spec, 'fish'),
    'man/panelctl.1': manPage(spec),
  };
}

async function main(argv: string[]): Promise<number> {
  const check = argv.includes('--check');
  const stale: string[] = [];
  for (const [path, content] of Object.entries(await generatedDocs())) {
    const file = join(ROOT, path);
    const current = await readFile(file, 'utf8').catch(() => null);
    if (current === content) continue;
    if (check) {
      stale.push(path);
      continue;
    }
    await mkdir(dirname(file), { recursive: true });
    await writeFile(file, content);
    process.stdout.write(`wrote ${path}\n`);
  }
  if (stale.length) {
    process.stderr.write(`out of date: ${stale.join(', ')}; run npm run gen:docs\n`);
    return 1;
  }
  return 0;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  main(process.argv.slice(2)).then((code) => {
    process.exitCode = code;
  });
}
