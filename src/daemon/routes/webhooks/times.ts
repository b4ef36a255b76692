// RFC 3339 times given to webhook routes (recover, delivery filters): the schema's date-time
// format is lenient, so the value is checked here and a bad one is 422 naming the field.
import { ApiError } from '../../../shared/errors.js';

const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/i;

/** Epoch ms of `value`, or 422 `<field>: must be an RFC 3339 timestamp`. */
export function parseTime(field: string, value: string): number {
  const at = Date.parse(value);
  if (!RFC3339.test(value) || Number.isNaN(at)) {
    throw new ApiError('VALIDATION_FAILED', `${field}: must be an RFC 3339 timestamp, e.g. 2030-01-31T12:00:00Z`);
  }
  return at;
}
