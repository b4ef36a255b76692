// The CLI's bundling drops esbuild's `__name` wrappers where JavaScript names the expression
// itself (scripts/bundle-names.mjs): every function must end up with the name it has without the
// wrapper's removal, and wrappers the language does not replace must stay.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const { inferredNames } = (await import(pathToFileURL(join(ROOT, 'scripts/bundle-names.mjs')).href)) as { inferredNames(text: string): string };

/** What `names` evaluates to after `source`, with keepNames' helper as esbuild writes it. */
const evaluate = (source: string, names: string) =>
  new Function(`var __name=(target,value)=>Object.defineProperty(target,"name",{value,configurable:!0});${source};return ${names}`)() as string[];

describe('dropping the __name wrappers the language makes redundant', () => {
  const source = [
    'var o={load:__name(async()=>1,"load"),"get":__name(function(){},"get"),other:__name(()=>1,"renamed"),[1+1]:__name(()=>1,"computed")}',
    'const outer=__name((v)=>__name(()=>v,"inner"),"outer")',
    'let assigned;assigned=__name(class{},"assigned")',
    'var nested=__name(()=>({a:__name(()=>1,"a")}),"nested")',
    'var named=__name(function own(){},"named")',
    'var argument=f(__name(()=>1,"argument"));function f(x){return x}',
  ].join(';');
  const names = '[o.load.name,o.get.name,o.other.name,o[2].name,outer.name,outer(1).name,assigned.name,nested.name,nested().a.name,named.name,argument.name]';

  it('gives every function the name it had with the wrapper', () => {
    const expected = ['load', 'get', 'renamed', 'computed', 'outer', 'inner', 'assigned', 'nested', 'a', 'named', 'argument'];
    expect(evaluate(source, names)).toEqual(expected);
    expect(evaluate(inferredNames(source), names)).toEqual(expected);
  });

  it('removes only the wrappers of anonymous expressions named by their place', () => {
    expect(inferredNames(source)).toBe(
      [
        'var o={load:async()=>1,"get":function(){},other:__name(()=>1,"renamed"),[1+1]:__name(()=>1,"computed")}',
        'const outer=(v)=>__name(()=>v,"inner")',
        'let assigned;assigned=class{}',
        'var nested=()=>({a:()=>1})',
        'var named=__name(function own(){},"named")',
        'var argument=f(__name(()=>1,"argument"));function f(x){return x}',
      ].join(';'),
    );
  });

  it('leaves none of them in the built bundles', async () => {
    for (const bundle of ['cli.js', 'cli.keys.js']) {
      const text = await readFile(join(ROOT, 'dist/cli-bundle', bundle), 'utf8');
      expect(inferredNames(text) === text, bundle).toBe(true);
    }
  });
});
