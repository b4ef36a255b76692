// Host-name validation for sites and subscriptions: one normalised (lower-case, ASCII/punycode)
// spelling per name, so duplicates are found whatever case or script the caller used.
import { domainToASCII } from 'node:url';

/** RFC 1035 limit on a name's text form without the trailing dot. */
export const HOSTNAME_MAX_LENGTH = 253;

const LABEL = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;

/**
 * Checks a host name and returns its normalised form, or a reason naming the rule it breaks.
 * Accepted: two or more labels of letters, digits and inner hyphens (1–63 characters each),
 * at most 253 characters, a top-level label that starts with a letter (so IP addresses are
 * refused), internationalised names (stored as punycode) and one trailing dot (dropped).
 *
 * @example
 * normaliseHostname('Bücher.Example.')  // { value: 'xn--bcher-kva.example' }
 * normaliseHostname('-bad.example')     // { error: 'label "-bad" must …' }
 */
export function normaliseHostname(input: string): { value: string } | { error: string } {
  if (input.length === 0) return { error: 'must not be empty' };
  if (input.length > HOSTNAME_MAX_LENGTH + 1) return { error: `must be at most ${HOSTNAME_MAX_LENGTH} characters` };
  // Checked before conversion: domainToASCII silently drops tabs and cuts at `/`.
  const bad = /[\x00-\x2c\x2f\x3a-\x40\x5b-\x60\x7b-\x7f]/.exec(input);
  if (bad) return { error: `must not contain ${JSON.stringify(bad[0])} (letters, digits, hyphens and dots only)` };
  // Unicode names go through the IDNA mapping (punycode, full-width letters, ideographic stops).
  const ascii = /[^\x00-\x7f]/.test(input) ? domainToASCII(input) : input.toLowerCase();
  if (ascii === '') return { error: 'is not a valid internationalised host name' };
  const name = ascii.endsWith('.') ? ascii.slice(0, -1) : ascii;
  if (name.length === 0) return { error: 'must not be empty' };
  if (name.length > HOSTNAME_MAX_LENGTH) return { error: `must be at most ${HOSTNAME_MAX_LENGTH} characters` };
  const labels = name.split('.');
  if (labels.length < 2) return { error: 'must be a fully qualified host name with at least two labels (e.g. example.com)' };
  for (const label of labels) {
    if (label.length === 0) return { error: 'must not contain empty labels (two dots in a row, or a leading dot)' };
    if (label.length > 63) return { error: `label "${label.slice(0, 20)}…" is longer than 63 characters` };
    if (!LABEL.test(label)) {
      return { error: `label "${label}" may only contain letters, digits and hyphens, and must not start or end with a hyphen` };
    }
  }
  if (!/^[a-z]/.test(labels[labels.length - 1])) {
    return { error: 'the top-level label must start with a letter (IP addresses are not host names)' };
  }
  // domainToASCII refuses `xn--` labels that are not valid punycode.
  if (name.includes('xn--') && domainToASCII(name) === '') return { error: 'contains an xn-- label that is not valid punycode' };
  return { value: name };
}
