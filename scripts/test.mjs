// `npm test` after the build: the tests' typecheck (tsc -p tsconfig.test.json) and the vitest run
// side by side. The run leaves part of a 2-core machine idle while its tests wait on daemons
// and timers, which the typecheck fills; either one failing fails the whole. Arguments go to
// vitest (`npm test -- test/cli`).
import { spawn } from 'node:child_process';

const run = (command, args) =>
  new Promise((resolve) => {
    const child = spawn(command, args, { stdio: 'inherit' });
    child.on('exit', (code, signal) => resolve(code ?? (signal ? 1 : 0)));
    child.on('error', (error) => {
      console.error(`${command}: ${error.message}`);
      resolve(1);
    });
  });

const bin = (name) => new URL(`../node_modules/.bin/${name}`, import.meta.url).pathname;
const [typecheck, tests] = await Promise.all([run(bin('tsc'), ['-p', 'tsconfig.test.json']), run(bin('vitest'), ['run', ...process.argv.slice(2)])]);
if (typecheck !== 0) console.error('npm test: the tests do not typecheck (tsc -p tsconfig.test.json)');
process.exit(typecheck !== 0 ? typecheck : tests);
