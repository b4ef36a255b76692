#!/usr/bin/env node
// Thin shim: the CLI lives in dist/cli/main.js (built by `npm run build`, run by `npm install`).
import { main } from '../dist/cli/main.js';

main(process.argv);
