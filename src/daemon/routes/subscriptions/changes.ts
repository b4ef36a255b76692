// How subscription and site changes are made: checked and written one at a time (so two
// requests cannot both pass a uniqueness check), then published before the request answers.
import type { FastifyRequest } from 'fastify';
import { ApiError } from '../../../shared/errors.js';
import type { PublishInput } from '../../dispatcher/bus.js';

/** Runs tasks one after another, in call order. */
export class Serialiser {
  #tail: Promise<unknown> = Promise.resolve();

  run<T>(task: () => Promise<T>): Promise<T> {
    const result = this.#tail.then(task);
    this.#tail = result.catch(() => undefined);
    return result;
  }
}

/**
 * Host names of subscriptions and sites share one namespace in this daemon: their checks and
 * writes go through this queue. (A shared backend would use unique constraints instead.)
 */
export const domainChanges = new Serialiser();

/**
 * Publishes the event of a change that is already durable, so the answer follows the queued
 * event. The record and the outbox are two files: if queueing fails, `undo` reverts the change
 * and the request fails with 503 as if nothing happened (a retry then publishes). Without an
 * undo (or if it fails too) the 503 says that the change stands without its event.
 */
export async function publishChange(
  request: FastifyRequest,
  input: PublishInput,
  what: string,
  undo?: () => Promise<unknown>,
): Promise<void> {
  try {
    await request.server.events.publish(input);
    return;
  } catch (error) {
    request.log.error({ err: error, event: input.event, data: input.data }, 'event could not be queued');
    if (undo) {
      try {
        await undo();
      } catch (undoError) {
        request.log.error({ err: undoError }, 'change could not be undone');
        throw lostEvent(input, what);
      }
      throw error;
    }
    throw lostEvent(input, what);
  }
}

function lostEvent(input: PublishInput, what: string): ApiError {
  return new ApiError('STORAGE_UNAVAILABLE', `${what} was saved, but its ${input.event} event could not be queued (storage unavailable)`, {
    headers: { 'retry-after': '5' },
  });
}
