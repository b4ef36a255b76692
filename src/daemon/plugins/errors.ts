// One error handler and one not-found handler: every answer, 404 and 500 included, is the
// envelope. Messages of 5xx errors are never leaked; they are logged with the request id.
import fp from 'fastify-plugin';
import type { FastifyError, FastifyInstance } from 'fastify';
import { API_ERRORS, ApiError, type ApiErrorCode } from '../../shared/errors.js';
import { StoreConflictError, StoreUnavailableError } from '../../store/store.js';
import { describeValidation, type ValidationIssue } from './validation.js';

function fastifyCode(error: FastifyError): ApiErrorCode | null {
  switch (error.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return 'PAYLOAD_TOO_LARGE';
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return 'UNSUPPORTED_MEDIA_TYPE';
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return 'BAD_REQUEST';
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return 'INVALID_JSON';
    default:
      break;
  }
  if (error instanceof SyntaxError || /JSON|prototype/i.test(error.message ?? '')) {
    if (error.statusCode === 400) return 'INVALID_JSON';
  }
  return null;
}

export default fp(
  async function errors(app: FastifyInstance) {
    app.setErrorHandler((error: FastifyError | ApiError | Error, request, reply) => {
      if (error instanceof ApiError) {
        reply.headers(error.headers);
        return reply.code(error.statusCode).send({ data: error.data, error: error.error, message: error.message });
      }
      const fe = error as FastifyError & { validation?: ValidationIssue[]; validationContext?: string };
      if (fe.validation) {
        const { status, message } = describeValidation(fe.validation, fe.validationContext);
        const code: ApiErrorCode = status === 400 ? 'BAD_REQUEST' : 'VALIDATION_FAILED';
        return reply.code(status).send({ data: null, error: API_ERRORS[code].error, message });
      }
      // Routes map the conflicts they expect to their own messages; one that reaches here is
      // still a duplicate, and the store's message names it without internals.
      if (error instanceof StoreConflictError) {
        return reply.code(409).send({ data: null, error: API_ERRORS.CONFLICT.error, message: error.message });
      }
      if (error instanceof StoreUnavailableError) {
        request.log.error({ err: error }, 'store unavailable');
        return reply.code(503).header('Retry-After', '5').send({
          data: null,
          error: API_ERRORS.STORAGE_UNAVAILABLE.error,
          message: 'the store is unavailable; nothing was changed. Try again later.',
        });
      }
      const known = fastifyCode(fe);
      if (known) {
        const { status, error: text } = API_ERRORS[known];
        const message =
          known === 'PAYLOAD_TOO_LARGE'
            ? 'request body is larger than the 1 MiB limit'
            : known === 'INVALID_JSON'
              ? 'request body is not valid JSON'
              : fe.message;
        return reply.code(status).send({ data: null, error: text, message });
      }
      const status = fe.statusCode && fe.statusCode >= 400 && fe.statusCode < 500 ? fe.statusCode : 500;
      if (status === 500) {
        request.log.error({ err: error }, 'unhandled error');
        return reply.code(500).send({ data: null, error: API_ERRORS.INTERNAL.error, message: 'internal server error' });
      }
      return reply.code(status).send({ data: null, error: API_ERRORS.BAD_REQUEST.error, message: fe.message });
    });

    app.setNotFoundHandler((request, reply) => {
      reply.code(404).send({
        data: null,
        error: API_ERRORS.NOT_FOUND.error,
        message: `no route ${request.method} ${request.url.split('?')[0]}`,
      });
    });
  },
  { name: 'errors' },
);
