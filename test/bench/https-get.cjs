// The floor of the CLI benchmark: what any Node client pays for `keys list --json` without the
// CLI, i.e. node's start, node:https, one verified request over a keep-alive agent (as the CLI's
// ApiClient makes it) and the body printed. Reads PANELCTL_URL, PANELCTL_TOKEN and PANELCTL_CA.
// CommonJS, as the CLI's loader and bundle are: an ES module would add Node's ESM loader to the
// floor (and `import` of node:fs builds its ES module facade).
'use strict';
const { readFileSync } = require('node:fs');
const https = require('node:https');

const agent = new https.Agent({ keepAlive: true });
const url = new URL(`${process.env.PANELCTL_URL}/api/v1/auth/api-keys`);
const ca = readFileSync(process.env.PANELCTL_CA, 'utf8');
const request = https.request(url, { headers: { accept: 'application/json', authorization: `Bearer ${process.env.PANELCTL_TOKEN}` }, agent, ca }, (response) => {
  const chunks = [];
  response.on('data', (chunk) => chunks.push(chunk));
  response.on('end', () => {
    agent.destroy();
    if (response.statusCode !== 200) process.exitCode = 1;
    process.stdout.write(`${JSON.stringify(JSON.parse(Buffer.concat(chunks).toString('utf8')).data, null, 2)}\n`);
  });
});
request.on('error', (error) => {
  process.stderr.write(`${error.message}\n`);
  process.exitCode = 1;
});
request.end();
