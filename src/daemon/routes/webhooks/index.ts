// Webhook routes: endpoints, their delivery logs and manual sends, and the live stream.
import type { FastifyInstance } from 'fastify';
import deliveryRoutes from './deliveries.js';
import endpointRoutes from './endpoints.js';
import streamRoutes from './stream.js';

export default async function webhookRoutes(app: FastifyInstance) {
  await app.register(endpointRoutes);
  await app.register(deliveryRoutes);
  await app.register(streamRoutes);
}
