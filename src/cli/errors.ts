// CLI failures carry their exit code (CONTRACT section 5: 0 ok, 1 error, 2 usage, 4 auth).
import { EXIT } from '../shared/errors.js';

export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode: number = EXIT.ERROR,
    readonly envelope?: unknown,
  ) {
    super(message);
    this.name = 'CliError';
  }
}

export class UsageError extends CliError {
  constructor(message: string) {
    super(message, EXIT.USAGE);
  }
}
