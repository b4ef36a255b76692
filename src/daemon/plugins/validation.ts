// Schema validation: bodies are validated strictly (no type coercion: `"name": 5` is a 400),
// path parameters and query strings are coerced from their string form ("7" → 7).
import { Ajv, type Options } from 'ajv';
import formatsPlugin from 'ajv-formats';
import type { FastifySchemaCompiler } from 'fastify';
import { isValidEmail } from '../../shared/email.js';

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

export const validatorCompiler: FastifySchemaCompiler<unknown> = ({ schema, httpPart }) => {
  const ajv = httpPart === 'body' ? bodyAjv : partsAjv;
  return ajv.compile(schema as object);
};

/** Rules whose failure means the request was malformed (400) rather than well-formed but invalid (422). */
const MALFORMED_RULES = new Set(['required', 'type', 'additionalProperties', 'dependentRequired']);

export interface ValidationIssue {
  keyword: string;
  instancePath: string;
  message?: string;
  params: Record<string, unknown>;
}

/** Maps the first validation failure to its status and a message that names the field and the rule. */
export function describeValidation(issues: ValidationIssue[], part: string | undefined): { status: 400 | 422; message: string } {
  const issue = issues[0];
  const status = issues.some((i) => MALFORMED_RULES.has(i.keyword)) ? 400 : 422;
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
