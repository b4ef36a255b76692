// The one rule for email addresses, used by every route that takes one (ajv's `email` format is
// replaced by it, see daemon/plugins/validation.ts) and by `init`. A dot-atom local part, as in
// ajv-formats, and a domain of one or more DNS labels: single-label domains are valid (RFC 5321
// allows them), so the panel's own default, admin@localhost, is an email address everywhere.

const ATOM = "[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+";
const LABEL = '[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?';

/** Local part of at most 64 characters; the whole address at most 254 (checked separately). */
export const EMAIL_PATTERN = `^(?=[^@]{1,64}@)${ATOM}(?:\\.${ATOM})*@${LABEL}(?:\\.${LABEL})*$`;
const EMAIL = new RegExp(EMAIL_PATTERN);

export const EMAIL_MAX_LENGTH = 254;

/**
 * Whether `value` is an email address the panel accepts. Surrounding whitespace is ignored (a
 * pasted address often carries some); the routes trim before they use it.
 *
 * @example
 * isValidEmail('admin@localhost'); // true
 * isValidEmail('jane@example.com'); // true
 * isValidEmail('jane@'); // false
 */
export function isValidEmail(value: string): boolean {
  const address = value.trim();
  return address.length <= EMAIL_MAX_LENGTH && EMAIL.test(address);
}
