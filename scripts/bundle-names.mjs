// A step of the CLI's bundling (scripts/build.mjs): esbuild's keepNames wraps every function and
// class expression in `__name(expression, "name")`, which defines `name` on it when the process
// runs it. Where JavaScript names the expression itself (an anonymous function, arrow or class
// that is a variable's initial value, an identifier's assigned value, or an object literal's
// property value under that very name), the wrapper is the only reason the expression has no
// name of its own: without it the language gives it the name the wrapper would. Those wrappers
// are removed here, and with them a `defineProperty` per function at run time (which also turns
// the function's properties into a dictionary): commander makes dozens of such functions for
// every command it builds. Every other wrapper stays.
import { createRequire } from 'node:module';

/**
 * `text` (esbuild's output) without the `__name` wrappers that only give an expression the name
 * the language gives it anyway.
 * @example
 * inferredNames('var o={load:__name(async()=>1,"load")};') // 'var o={load:async()=>1};'
 */
export function inferredNames(text) {
  const ts = createRequire(import.meta.url)('typescript');
  const file = ts.createSourceFile('bundle.js', text, ts.ScriptTarget.Latest, true, ts.ScriptKind.JS);
  const anonymous = (node) => ts.isArrowFunction(node) || ((ts.isFunctionExpression(node) || ts.isClassExpression(node)) && !node.name);
  /** The name the language gives an anonymous function in `node`'s place, or null. */
  const inferred = (node) => {
    const parent = node.parent;
    if (ts.isVariableDeclaration(parent) && parent.initializer === node && ts.isIdentifier(parent.name)) return parent.name.text;
    if (ts.isPropertyAssignment(parent) && parent.initializer === node && (ts.isIdentifier(parent.name) || ts.isStringLiteral(parent.name))) return parent.name.text;
    if (ts.isBinaryExpression(parent) && parent.operatorToken.kind === ts.SyntaxKind.EqualsToken && parent.right === node && ts.isIdentifier(parent.left)) return parent.left.text;
    return null;
  };
  const edits = [];
  const visit = (node) => {
    if (ts.isCallExpression(node) && ts.isIdentifier(node.expression) && node.expression.text === '__name' && node.arguments.length === 2) {
      const [expression, name] = node.arguments;
      // Two cuts, `__name(` and `,"name")`, so that a wrapper inside the expression can go too.
      if (ts.isStringLiteral(name) && anonymous(expression) && inferred(node) === name.text) edits.push([node.getStart(file), expression.getStart(file)], [expression.end, node.end]);
    }
    node.forEachChild(visit);
  };
  visit(file);
  let out = text;
  for (const [from, to] of edits.sort((a, b) => b[0] - a[0])) out = out.slice(0, from) + out.slice(to);
  return out;
}
