// How /api/docs looks: the panelctl mark in the top bar (instead of the fastify logo that
// @fastify/swagger-ui shows by default), a stylesheet that keeps the code chips of the page's
// tables whole, and summaries as the plain text OpenAPI says they are.

/** The top bar's mark: a prompt and the name, white on the bar's dark background. */
export const LOGO_SVG = `<svg xmlns="http://www.w3.org/2000/svg" width="168" height="40" viewBox="0 0 168 40" role="img" aria-label="panelctl">
<rect x="2" y="8" width="24" height="24" rx="5" fill="#62a03f"/>
<path d="M8 14.5l6 5.5-6 5.5M16 26h6" stroke="#fff" stroke-width="2.5" fill="none" stroke-linecap="round" stroke-linejoin="round"/>
<text x="34" y="27" font-family="DejaVu Sans Mono, Menlo, Consolas, monospace" font-size="20" font-weight="700" fill="#fff">panelctl</text>
</svg>
`;

/**
 * A code chip in a table cell (the error table's `error` strings) is one unbreakable box: broken
 * across lines, its background spilled over the next line and into the next column. Whole, it
 * widens its column instead, and chips of one cell wrap between each other with room above.
 */
export const PAGE_CSS = `.swagger-ui .markdown table td code,
.swagger-ui .renderedMarkdown table td code {
  display: inline-block;
  white-space: nowrap;
  margin: 2px 0;
  line-height: 1.5;
}
`;

/**
 * The document with every operation's `summary` as plain text: Swagger UI (and Redoc) show a
 * summary as typed, so code marks written for Markdown appeared as raw backticks. Descriptions
 * are Markdown and keep theirs.
 * @example
 * plainSummaries({ paths: { '/a': { get: { summary: 'List `x`' } } } }); // summary 'List x'
 */
export function plainSummaries<T extends object>(document: T): T {
  const doc = document as { paths?: Record<string, Record<string, unknown>>; webhooks?: Record<string, Record<string, unknown>> };
  for (const group of [doc.paths, doc.webhooks]) {
    for (const item of Object.values(group ?? {})) {
      for (const operation of Object.values(item ?? {})) {
        const op = operation as { summary?: unknown };
        if (op && typeof op === 'object' && typeof op.summary === 'string') op.summary = op.summary.replace(/`/g, '');
      }
    }
  }
  return document;
}
