// Schema validation: bodies are validated strictly (no type coercion: `"name": 5` is a 400),
// path parameters and query strings are coerced from their string form ("7" → 7), and their
// integers (ids above all) must be written in plain decimal: `0x1`, `1e3` or `01` are a 400.
import { Ajv, type Options } from 'ajv';
import formatsPlugin from 'ajv-formats';
import type { FastifySchemaCompiler, FastifySchemaValidationError } from 'fastify';
import { isValidEmail } from '../../shared/email.js';
import { MAX_ID } from '../../shared/envelope.js';

function makeAjv(options: Options): Ajv {
  const ajv = new Ajv({ allErrors: false, useDefaults: true, strict: false, ...options });
  // ajv-formats is CommonJS: its default export arrives as the module object under NodeNext.
  const addFormats = ((formatsPlugin as { default?: unknown }).default ?? formatsPlugin) as (ajv: Ajv) => Ajv;
  addFormats(ajv);
  // One email rule for every route (shared/email.ts): ajv-formats' own wants a dotted domain
  // and refuses admin@localhost, the address `init` gives the first admin.
  ajv.addFormat('email', { type: 'string', validate: isValidEmail });
  return ajv;
}

const bodyAjv = makeAjv({ coerceTypes: false, removeAdditional: false });
const partsAjv = makeAjv({ coerceTypes: 'array', removeAdditional: false });

/** Path and query ids: plain decimal, no sign, no leading zeros, at most 16 digits (then ≤ MAX_ID). */
const ID_TEXT = /^[1-9][0-9]{0,15}$/;
/** Other integers of the path and the query (e.g. `limit`): plain decimal; the schema checks the range. */
const INTEGER_TEXT = /^(0|-?[1-9][0-9]*)$/;
export const ID_RULE = `must be a decimal integer from 1 to ${MAX_ID} (no sign, no leading zeros)`;

interface IntegerField {
  name: string;
  /** An id (the `Id()` schema): anything but its canonical decimal form is a 400, range included. */
  id: boolean;
}

type Validator = ((data: unknown, context?: unknown) => boolean) & { errors?: FastifySchemaValidationError[] | null; schemaEnv?: unknown };

function integerFields(schema: unknown): IntegerField[] {
  const properties = (schema as { properties?: Record<string, { type?: unknown; minimum?: unknown; maximum?: unknown }> })?.properties ?? {};
  return Object.entries(properties)
    .filter(([, field]) => field.type === 'integer')
    .map(([name, field]) => ({ name, id: field.minimum === 1 && field.maximum === MAX_ID }));
}

/**
 * Ajv's coercion reads path and query strings with Number(), so `0x1`, `1e3`, ` 7` and `01`
 * would all pass as integers. This runs first and accepts only the plain decimal spelling.
 */
function strictIntegers(fields: IntegerField[], validate: Validator): Validator {
  const check: Validator = (data, context) => {
    const values = (data ?? {}) as Record<string, unknown>;
    for (const { name, id } of fields) {
      const raw = values[name];
      if (raw === undefined) continue;
      const text = typeof raw === 'number' ? String(raw) : raw;
      const fine = typeof text === 'string' && (id ? ID_TEXT.test(text) && Number(text) <= MAX_ID : INTEGER_TEXT.test(text));
      if (!fine) {
        const message = id ? ID_RULE : 'must be a single decimal integer';
        check.errors = [{ keyword: 'decimal', instancePath: `/${name}`, schemaPath: `#/properties/${name}`, message, params: {} }];
        return false;
      }
    }
    const valid = validate(data, context);
    check.errors = validate.errors;
    return valid;
  };
  // Fastify passes the parent object (so coerced values land on the request) only to validators with a schemaEnv.
  check.schemaEnv = validate.schemaEnv;
  return check;
}

function compileValidator(schema: unknown, httpPart: string | undefined): Validator {
  if (httpPart === 'body') return bodyAjv.compile(schema as object) as Validator;
  const validate = partsAjv.compile(schema as object) as Validator;
  if (httpPart !== 'params' && httpPart !== 'querystring') return validate;
  const fields = integerFields(schema);
  return fields.length === 0 ? validate : strictIntegers(fields, validate);
}

/** True for an object with no enumerable field (the usual query string: none sent). */
function isEmptyObject(data: unknown): boolean {
  if (data === null || typeof data !== 'object' || Array.isArray(data)) return false;
  for (const _ in data) return false;
  return true;
}

/**
 * Each route's validators are compiled when a request first needs them, not when the route is
 * added, so a daemon starts without compiling the schemas of routes it may never serve. Most
 * requests send no query string: once an empty query (or path parameters) passed and was left
 * empty (no defaults to fill in), later empty ones are answered valid without the validator.
 */
export const validatorCompiler: FastifySchemaCompiler<unknown> = ({ schema, httpPart }) => {
  let compiled: Validator | null = null;
  const parts = httpPart === 'querystring' || httpPart === 'params';
  let emptyPasses = false;
  const check: Validator = (data, context) => {
    const empty = parts && isEmptyObject(data);
    if (empty && emptyPasses) {
      check.errors = null;
      return true;
    }
    compiled ??= compileValidator(schema, httpPart);
    const valid = compiled(data, context);
    check.errors = compiled.errors;
    if (empty && valid && isEmptyObject(data)) emptyPasses = true;
    return valid;
  };
  // Fastify passes the parent object (so coerced values land on the request) only to validators
  // with a schemaEnv, which every ajv validator has; the context reaches the compiled one as is.
  check.schemaEnv = true;
  return check;
};

/** Rules whose failure means the request was malformed (400) rather than well-formed but invalid (422). */
const MALFORMED_RULES = new Set(['required', 'type', 'additionalProperties', 'dependentRequired', 'decimal']);

export interface ValidationIssue {
  keyword: string;
  instancePath: string;
  message?: string;
  params: Record<string, unknown>;
}

/** Maps the first validation failure to its status and a message that names the field and the rule. */
export function describeValidation(issues: ValidationIssue[], part: string | undefined): { status: 400 | 422; message: string } {
  const issue = issues[0];
  // A value that failed a union (`owner_id`: an id or null) fails each branch: a number out of
  // range also "is not null". The branch it matched by type decides: then the range is a 422.
  const unions = new Set(issues.filter((i) => i.keyword === 'anyOf').map((i) => i.instancePath));
  const typedBranch = (path: string) => issues.some((i) => i.instancePath === path && i.keyword !== 'type' && i.keyword !== 'anyOf');
  const relevant = issues.filter((i) => !(i.keyword === 'type' && unions.has(i.instancePath) && typedBranch(i.instancePath)));
  const status = relevant.some((i) => MALFORMED_RULES.has(i.keyword)) ? 400 : 422;
  let field = issue.instancePath.replace(/^\//, '').replace(/\//g, '.');
  if (issue.keyword === 'required') field = [field, String(issue.params.missingProperty)].filter(Boolean).join('.');
  if (issue.keyword === 'additionalProperties') {
    field = [field, String(issue.params.additionalProperty)].filter(Boolean).join('.');
    return { status, message: `${field}: unknown field` };
  }
  const where = part === 'querystring' ? 'query parameter ' : part === 'params' ? 'path parameter ' : '';
  const rule = issue.keyword === 'required' ? 'is required' : (issue.message ?? 'is invalid');
  return { status, message: `${where}${field || part || 'body'}: ${rule}` };
}

/**
 * Where the first string holding a NUL character is in `value` (`data.domain`, `tags.0`; '' for
 * `value` itself), or null. No store keeps a NUL in text (PostgreSQL refuses it), so the API
 * refuses it in every part of a request, on either store alike. Walks with a stack of its own,
 * so a deeply nested body cannot exhaust the call stack; bytes (a Buffer) hold no text.
 */
export function nulPath(value: unknown): string | null {
  const stack: [unknown, string][] = [[value, '']];
  while (stack.length > 0) {
    const [item, path] = stack.pop()!;
    if (typeof item === 'string') {
      if (item.includes('\0')) return path;
    } else if (item !== null && typeof item === 'object' && !ArrayBuffer.isView(item)) {
      const children = Object.entries(item);
      // Pushed last to first, so fields are looked at in their order.
      for (let i = children.length - 1; i >= 0; i--) stack.push([children[i][1], path ? `${path}.${children[i][0]}` : children[i][0]]);
    }
  }
  return null;
}
