// The API benchmark's baseline: a bare fastify HTTPS route answering the same body with the
// same certificate, in its own process like the daemon. argv: certFile keyFile bodyFile
import { readFileSync } from 'node:fs';
import Fastify from 'fastify';

const [certFile, keyFile, bodyFile] = process.argv.slice(2);
const body = readFileSync(bodyFile, 'utf8');
const app = Fastify({ https: { cert: readFileSync(certFile), key: readFileSync(keyFile) } });
app.get('/api/v1/sites', async (_request, reply) => reply.header('content-type', 'application/json; charset=utf-8').send(body));
await app.listen({ host: '127.0.0.1', port: 0 });
process.stdout.write(`${app.server.address().port}\n`);
// A clean exit on a signal lets --cpu-prof write its profile (BENCH_PROFILE_DIR).
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => app.close().then(() => process.exit(0)));
