// ApiClient over its real HTTP layer (node:http here, node:https for the daemon), against a local
// server: what the fake transport of the run-* tests cannot show, such as how the answer's `Link`
// header is read from the response.
import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiClient } from '../../src/cli/api-client.js';

describe('ApiClient over node:http', () => {
  let server: Server;
  let baseUrl: string;
  const requested: string[] = [];

  beforeAll(async () => {
    server = createServer((request, response) => {
      requested.push(request.url ?? '');
      const after = new URL(request.url ?? '/', 'http://daemon').searchParams.get('after');
      const page = (data: unknown[], links: string[]) => {
        // Several `Link` fields, in any case, are one header: read together, as Node joins them.
        response.writeHead(200, [['content-type', 'application/json'], ...links.map((link, i) => [i % 2 ? 'LINK' : 'link', link])].flat());
        response.end(JSON.stringify({ data, error: null, message: '' }));
      };
      if (after === null) page([{ id: 1 }, { id: 2 }], [`<${baseUrl}/api/v1/sites?after=2>; rel="next"`]);
      else if (after === '2') page([{ id: 3 }], [`<${baseUrl}/api/v1/sites>; rel="first"`, `<${baseUrl}/api/v1/sites?after=3>; rel="next"`]);
      else page([{ id: 4 }], []);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    baseUrl = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  });
  afterAll(async () => {
    await new Promise((resolve) => server.close(resolve));
  });

  it("list() follows each answer's rel=\"next\", also when it is the second of several Link fields", async () => {
    const client = new ApiClient({ baseUrl, token: 't' });
    try {
      expect(await client.list<{ id: number }>('/sites')).toEqual([{ id: 1 }, { id: 2 }, { id: 3 }, { id: 4 }]);
    } finally {
      await client.close();
    }
    expect(requested).toEqual(['/api/v1/sites', '/api/v1/sites?after=2', '/api/v1/sites?after=3']);
  });
});
