// Webhook routes: endpoints, their delivery logs, manual sends and recovery, secret rotation, and the live stream.
import type { FastifyInstance } from 'fastify';
import deliveryRoutes from './deliveries.js';
import endpointRoutes from './endpoints.js';
import recoverRoutes from './recover.js';
import rotateSecretRoutes from './rotate-secret.js';
import streamRoutes from './stream.js';

export default async function webhookRoutes(app: FastifyInstance) {
  await app.register(endpointRoutes);
  await app.register(deliveryRoutes);
  await app.register(recoverRoutes);
  await app.register(rotateSecretRoutes);
  await app.register(streamRoutes);
}
