#!/usr/bin/env node
// Thin shim: the CLI is src/cli, bundled into dist/cli-bundle/ by `npm run build` (run by
// `npm install`); dist/cli/ holds the same code unbundled (docs generator, tests).
import { main } from '../dist/cli-bundle/main.js';

main(process.argv);
