// The API benchmark's baseline: a bare fastify HTTPS route per measured path, answering the
// same body with the same certificate, in its own process like the daemon.
// argv: certFile keyFile path=bodyFile [path=bodyFile …]
import { readFileSync } from 'node:fs';
import Fastify from 'fastify';

const [certFile, keyFile, ...routes] = process.argv.slice(2);
const app = Fastify({ https: { cert: readFileSync(certFile), key: readFileSync(keyFile) } });
for (const route of routes) {
  const [path, bodyFile] = route.split('=');
  const body = readFileSync(bodyFile, 'utf8');
  app.get(path, async (_request, reply) => reply.header('content-type', 'application/json; charset=utf-8').send(body));
}
await app.listen({ host: '127.0.0.1', port: 0 });
process.stdout.write(`${app.server.address().port}\n`);
// A clean exit on a signal lets --cpu-prof write its profile (BENCH_PROFILE_DIR).
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => app.close().then(() => process.exit(0)));
